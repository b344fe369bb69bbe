import type { ChatMessage, Summarizer, SummaryRequest } from '../../src/index.js';
import type { SummaryOutput } from '../../src/core/compaction/compaction-types.js';
import { messageText } from '../../src/core/messages.js';

/** A summariser that records its requests and answers with `answer(request)`. */
export function recordingSummarizer(answer: (request: SummaryRequest) => string | SummaryOutput | Promise<string | SummaryOutput>): Summarizer & { requests: SummaryRequest[] } {
  const requests: SummaryRequest[] = [];
  return {
    requests,
    async summarize(request) {
      requests.push(request);
      return answer(request);
    },
  };
}

/** Answers one vague sentence, losing every identifier. */
export function vagueSummarizer() {
  return recordingSummarizer(() => 'The user and the assistant talked about several things.');
}

/** Keeps the previous summary and every line of the turns: a faithful (if long) summary. */
export function faithfulSummarizer() {
  return recordingSummarizer((r) => [r.previousSummary ?? '', ...r.turns.map(textOf)].join('\n').slice(0, r.targetTokens * 3));
}

/** Keeps the previous summary and the turns' words, but drops a pseudo-random 30% of the words. */
export function lossySummarizer(seed = 7) {
  let state = seed;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  return recordingSummarizer((r) => {
    const words = [r.previousSummary ?? '', ...r.turns.map(textOf)].join(' ').split(/\s+/);
    return words.filter(() => random() >= 0.3).join(' ').slice(0, r.targetTokens * 3);
  });
}

/** Throws the given error on every call. */
export function failingSummarizer(error: unknown) {
  return recordingSummarizer(() => {
    throw error;
  });
}

function textOf(message: ChatMessage): string {
  const calls = message.role === 'assistant' && message.tool_calls ? message.tool_calls.map((c) => `${c.function.name} ${c.function.arguments}`).join(' ') : '';
  return `${message.role}: ${messageText(message)} ${calls}`;
}
