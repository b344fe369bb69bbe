import type { LlmError } from '../src/errors.js';
import { PAUSED_SENTENCE } from '../src/core/compaction/compaction-text.js';
import { countOf } from '../src/core/plural.js';
import { isTimeout } from '../src/llm/errors.js';

/** User-facing texts of the ways a turn can end without an answer. */
export const TURN_NOTICES = {
  contextOverflow: 'This conversation no longer fits into the model\'s context window, even after compacting it. Use /compact <focus> to summarise it around what matters, or /reset to start over.',
  unavailable: (detail: string) => `The model is not answering right now (${detail}). Your message is kept and will be answered when it is retried; you can also send it again in a little while.`,
  refused: (detail: string) => `The model endpoint refused the request (${detail}). An operator needs to check the configuration; your message is kept and will be answered when it is retried.`,
  maxCalls: (calls: number) => `I stopped after ${countOf(calls, 'model call')} in this turn without finishing. Ask me to continue if you want me to go on.`,
  paused: PAUSED_SENTENCE,
  /** The answer of a turn ended by `/stop`. */
  stopped: 'Stopped.',
  empty: 'The model returned an empty answer.',
  failed: (messages: number) => `Sorry, something went wrong and I could not answer ${messages === 1 ? 'your last message' : `your last ${countOf(messages, 'message')}`}. Please send ${messages === 1 ? 'it' : 'them'} again.`,
} as const;

/** The detail a model-failure notice names: the status, a timeout (with `timeoutMs`), no connection, malformed answers. */
export function modelFailureDetail(error: LlmError, timeoutMs?: number): string {
  if (error.status) return `HTTP ${error.status}`;
  if (isTimeout(error)) return timeoutMs ? `it did not answer within ${timeoutMs / 1000} s` : 'it did not answer in time';
  if (error.kind === 'connection') return 'it cannot be reached';
  return error.kind === 'transient' ? 'its answers were malformed' : error.kind;
}
