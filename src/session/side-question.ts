/**
 * `/btw <question>`: a side question answered from the session's current context, outside its
 * turns. The model sees what the next turn would see — the projection (summary and recent
 * messages, as last committed) and the notes — then the question, and answers without tools. Neither
 * the question nor the answer enters the projection or the transcript, so the main thread never
 * sees them; a running turn is neither waited for nor changed (what it has not committed yet is not
 * seen). The call is counted in the session's usage ledger and rollups and, like every model call, in the budgets.
 */
import type { TurnSpend } from '../core/budget.js';
import type { ChatMessage } from '../core/messages.js';
import { createLlmClient, type LlmClient } from '../llm/client.js';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import { createSessionNotes } from '../redis/notes.js';
import type { SessionStore } from '../redis/session-store.js';
import { callUsageDelta, type PriceTable } from '../redis/usage.js';

/** What a side question needs. */
export interface SideQuestionDeps {
  redis: RedisClient;
  store: SessionStore;
  llm: LlmClient;
  logger: Logger;
}

/** Options of {@link createSideQuestion}. */
export interface SideQuestionOptions {
  systemPrompt: string;
  contextWindow: number;
  /** Output limit of the answer, tokens; 0: none. */
  reservedOutputTokens: number;
  prices?: PriceTable;
}

/** The framing of the question: the model answers it from the conversation, briefly, as an aside. */
const SIDE_QUESTION_PREFIX = '[Side question, asked beside the conversation: answer it briefly from the conversation so far. It is not part of the conversation and no tools are available.]\n';

/** Answers a side question; its call counts for `user` (who asked) and the chat. */
export type SideQuestion = (sessionId: string, question: string, user?: string) => Promise<string>;

/** Answers a side question for a session. @returns the answer text. @throws LlmError when the model call fails. */
export function createSideQuestion(deps: SideQuestionDeps, options: SideQuestionOptions): SideQuestion {
  const log = deps.logger.child({ component: 'side-question' });
  return async (sessionId, question, user) => {
    const keys = deps.store.keys(sessionId);
    const [snapshot, notes] = await Promise.all([deps.store.load(sessionId), createSessionNotes(deps.redis, keys).list()]);
    const noteLines = Object.entries(notes).map(([key, text]) => `- ${key}: ${text}`);
    const messages: ChatMessage[] = [
      { role: 'system', content: options.systemPrompt },
      ...(noteLines.length > 0 ? [{ role: 'system' as const, content: `Notes saved with the remember tool:\n${noteLines.join('\n')}` }] : []),
      ...snapshot.entries.map((entry) => entry.message),
      { role: 'user', content: `${SIDE_QUESTION_PREFIX}${question}` },
    ];
    // Counted like a turn of one call: a limit it brings to the notice share or uses up is told below the answer.
    const notices: string[] = [];
    const turn: TurnSpend = { usedMicro: 0, usedTokens: 0, onNotice: (text) => notices.push(text) };
    const scope = { chat: sessionId, ...(user ? { user } : {}), turn };
    const result = await deps.llm.complete({ messages, logger: log, scope, ...(options.reservedOutputTokens > 0 ? { maxTokens: options.reservedOutputTokens } : {}) });
    await turn.settling;
    // Counters only (addUsage sets nothing): the context fill is the main thread's, which this call did not change.
    if (result.usage) await deps.store.addUsage(sessionId, callUsageDelta(result.model, result.usage, options.contextWindow, options.prices), user);
    log.info({ sessionId, promptTokens: result.usage?.promptTokens }, 'side question answered');
    const text = (result.message.content ?? '').trim();
    return [text === '' ? 'I have no answer to that side question.' : text, ...notices].join('\n\n');
  };
}

/**
 * {@link createSideQuestion} with its own client of the agent's endpoint (no streaming, one retry),
 * through `guardLlm` (the budget wrapper, src/budget/guard.ts) when budgets are on.
 */
export function createLlmSideQuestion(
  deps: Omit<SideQuestionDeps, 'llm'> & { guardLlm?: (llm: LlmClient) => LlmClient },
  options: SideQuestionOptions & { baseURL: string; apiKey?: string; model: string; timeoutMs: number },
): SideQuestion {
  const client = createLlmClient({ baseURL: options.baseURL, apiKey: options.apiKey, model: options.model, timeoutMs: options.timeoutMs, retry: { maxRetries: 1 }, stream: false }, { logger: deps.logger });
  const { guardLlm, ...rest } = deps;
  return createSideQuestion({ ...rest, llm: guardLlm ? guardLlm(client) : client }, options);
}
