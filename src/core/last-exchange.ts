import { messageText, type ChatMessage } from './messages.js';

/** The last exchange of a projection: where it starts and the user messages that opened it. */
export interface LastExchange {
  /** Index of its first user message: the exchange is `messages.slice(start)`. */
  start: number;
  /** The text of each user message of it, in order (a turn may have taken several). */
  userTexts: string[];
  /** The exchange holds the message at `summaryIndex` (a compaction folded the summary into it): it cannot be taken out. */
  holdsSummary: boolean;
}

/**
 * The last exchange of a projection, pure: the last run of consecutive user messages and
 * everything after it (the answer, tool calls and results). `summaryIndex` is the index of the
 * message holding the session's summary block (-1 for none). Null when there is no user message
 * with text.
 */
export function lastExchange(messages: readonly ChatMessage[], summaryIndex = -1): LastExchange | null {
  let end = messages.length - 1;
  while (end >= 0 && messages[end]!.role !== 'user') end--;
  if (end < 0) return null;
  let start = end;
  while (start > 0 && messages[start - 1]!.role === 'user') start--;
  const userTexts = messages.slice(start, end + 1).map((message) => messageText(message)).filter((text) => text.trim() !== '');
  if (userTexts.length === 0) return null;
  return { start, userTexts, holdsSummary: summaryIndex >= start };
}
