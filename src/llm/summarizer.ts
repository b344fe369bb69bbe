import type { Summarizer, SummaryRequest, SummaryOutput } from '../core/compaction/compaction-types.js';
import type { ChatMessage } from '../core/messages.js';
import { BudgetError } from '../errors.js';
import { messageText } from '../core/messages.js';
import { headEnd, tailStart } from '../core/text.js';
import type { Logger } from '../log.js';
import { createSilentLogger } from '../log.js';
import type { LlmClient } from './client.js';

/** The fixed sections of every handoff summary, in order. */
export const SUMMARY_SECTIONS: readonly string[] = [
  'Goal',
  'Constraints and preferences',
  'Completed actions',
  'Active state',
  'Open questions',
  'Key decisions and why',
  'References (ids, paths, URLs)',
  'Next steps',
  'Critical context',
];

/** First line of every summariser system prompt (lets tests and logs recognise the call). */
export const SUMMARIZER_MARK = 'You write handoff summaries of conversations';

/** Characters of one message kept in the summariser prompt (head and tail), to bound its size. */
const MAX_MESSAGE_CHARS = 3000;

/** Options of {@link createSummarizer}. */
export interface LlmSummarizerOptions {
  /** A cheaper model for summaries; on failure the main model is tried once. Default: the main model. */
  summaryModel?: string;
}

/** Creates the summariser the compressor calls: same endpoint, summary model with fallback; answers carry the call's usage. */
export function createSummarizer(deps: { llm: LlmClient; logger?: Logger }, options: LlmSummarizerOptions = {}): Summarizer {
  const log = (deps.logger ?? createSilentLogger()).child({ component: 'summarizer' });
  const mainModel = deps.llm.model;
  const summaryModel = options.summaryModel ?? mainModel;
  const ask = async (model: string, request: SummaryRequest): Promise<SummaryOutput> => {
    const result = await deps.llm.complete({ model, messages: buildSummaryPrompt(request), maxTokens: Math.ceil(request.targetTokens * 1.5), ...(request.scope ? { scope: request.scope } : {}) });
    return { text: (result.message.content ?? '').trim(), usage: result.usage ?? undefined };
  };
  return {
    async summarize(request) {
      try {
        return await ask(summaryModel, request);
      } catch (err) {
        // A used-up budget refuses the main model as well: no second call is asked for.
        if (summaryModel === mainModel || err instanceof BudgetError) throw err;
        log.warn({ err, summaryModel, mainModel }, 'summary model failed, falling back to the main model');
        return ask(mainModel, request);
      }
    },
  };
}

/** Builds the summariser prompt from a {@link SummaryRequest}: system rules plus one user message. */
export function buildSummaryPrompt(request: SummaryRequest): ChatMessage[] {
  const sections = SUMMARY_SECTIONS.map((name) => `## ${name}`).join('\n');
  const system = [
    `${SUMMARIZER_MARK} so another assistant can continue them without the original messages.`,
    'Write in the language the user writes in. Redact secrets (passwords, API keys, tokens) as [secret].',
    'Keep every identifier, number, path, URL, email, amount and date that may matter, verbatim.',
    request.today ? `Today is ${request.today}. Write finished work as dated past events ("on ${request.today}: refunded …"), not as tasks.` : '',
    `Use exactly these sections, in this order (write "none" under an empty one):\n${sections}`,
    `Stay within about ${request.targetTokens} tokens. Output only the summary.`,
  ].filter((line) => line !== '').join('\n');
  const parts: string[] = [];
  if (request.previousSummary) {
    parts.push('Update the previous summary below with the new turns: keep what is still true, revise what changed, add what is new. Do not summarise the summary again and do not nest it.');
    parts.push(`<previous-summary>\n${request.previousSummary}\n</previous-summary>`);
  }
  if (request.focus) parts.push(`Focus especially on: ${request.focus}`);
  else if (request.autoFocus) parts.push(`The conversation is now about (the latest user messages): ${request.autoFocus}\nKeep in most detail what bears on that.`);
  if (request.mustKeep && request.mustKeep.length > 0) {
    parts.push(`These identifiers must appear verbatim under "References (ids, paths, URLs)", each with a few words on what it is:\n${request.mustKeep.map((fact) => `- ${fact}`).join('\n')}`);
  }
  if (request.latestRequest) parts.push('The latest user request among these turns is quoted verbatim after your summary by the system: refer to it, do not copy it.');
  parts.push(`<new-turns>\n${request.turns.map(renderTurn).join('\n')}\n</new-turns>`);
  return [{ role: 'system', content: system }, { role: 'user', content: parts.join('\n\n') }];
}

function renderTurn(message: ChatMessage): string {
  const text = excerpt(messageText(message));
  if (message.role === 'assistant' && message.tool_calls?.length) {
    const calls = message.tool_calls.map((call) => `${call.function.name}(${excerpt(call.function.arguments)})`).join('; ');
    return `[assistant${text ? `] ${text}\n[assistant` : ''} calls] ${calls}`;
  }
  if (message.role === 'tool') return `[tool result ${message.tool_call_id}] ${text}`;
  return `[${message.role}] ${text}`;
}

function excerpt(text: string): string {
  if (text.length <= MAX_MESSAGE_CHARS) return text;
  const half = MAX_MESSAGE_CHARS / 2;
  const head = text.slice(0, headEnd(text, half));
  const tail = text.slice(tailStart(text, half));
  return `${head}\n[… ${text.length - head.length - tail.length} chars omitted …]\n${tail}`;
}
