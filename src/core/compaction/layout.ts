import { alignToGroupStart, groupEnd, hasToolCalls, isToolImagesMessage, lastUserIndex, messageText, type ChatMessage } from '../messages.js';
import type { TokenCounter } from '../tokens.js';
import { trimToolResult } from './prune.js';
import { factsOfMessage } from './facts.js';

/** Characters a tail tool result outside the current round is trimmed to when the tail is over budget. */
export const TAIL_TRIM_CHARS = 800;

/** Where the parts of a history begin and end (indices into the messages, end exclusive). */
export interface Layout {
  /** End of the leading system messages. */
  systemEnd: number;
  /** End of the protected head (system messages, plus the first N others before any compaction). */
  headEnd: number;
  /** Index of the message holding the current summary block, or -1. */
  summaryIndex: number;
  /** Start of the protected tail. */
  tailStart: number;
  /** Start of the latest exchange: the latest user message (or the end when there is none). */
  exchangeStart: number;
  /** Start of what the tail must always hold: the latest exchange and the latest assistant text. */
  mandatoryStart: number;
  /** Tail indices of tool results that must be trimmed for the tail to fit its budget. */
  trimmed: number[];
}

/** Budgets and protections used to lay out a history. */
export interface LayoutOptions {
  protectFirstN: number;
  protectLastN: number;
  /** Soft token budget of the tail. */
  tailBudget: number;
  /** Hard ceiling of the tail, used only to honour the message floor. */
  tailCeiling: number;
  /** Largest head (beyond the system prompt) worth protecting, in tokens. */
  maxHeadTokens: number;
  /** Counts the messages' tokens and remembers their facts. */
  tokens: TokenCounter;
  model?: string;
}

/**
 * Lays out a history: head, summary, middle and tail, never splitting a tool-call group.
 * `summaryIndex` is the message holding the engine's own summary block (-1 for none).
 */
export function computeLayout(messages: readonly ChatMessage[], options: LayoutOptions, summaryIndex = -1): Layout {
  const n = messages.length;
  const systemEnd = systemPrefixEnd(messages);
  const lastUser = lastUserIndex(messages);
  const exchangeStart = lastUser >= 0 ? lastUser : n;
  const mandatoryStart = Math.max(mandatoryTailStart(messages, exchangeStart), summaryIndex + 1, systemEnd);
  const headEnd = Math.min(headBoundary(messages, systemEnd, summaryIndex, options), mandatoryStart);
  const floorIndex = Math.max(headEnd, summaryIndex + 1);
  const { tailStart, trimmed } = walkTail(messages, Math.max(mandatoryStart, floorIndex), floorIndex, options);
  return { systemEnd, headEnd, summaryIndex, tailStart, exchangeStart, mandatoryStart, trimmed };
}

/** Sums the framed tokens of `messages[from, to)`, as `tokens` counts them. */
export function rangeTokens(messages: readonly ChatMessage[], from: number, to: number, tokens: TokenCounter, model?: string): number {
  let total = 0;
  for (let i = from; i < to; i++) total += tokens.messageTokens(messages[i]!, model);
  return total;
}

/** End of the leading system messages. */
export function systemPrefixEnd(messages: readonly ChatMessage[]): number {
  let end = 0;
  while (end < messages.length && messages[end]!.role === 'system') end++;
  return end;
}

function mandatoryTailStart(messages: readonly ChatMessage[], exchangeStart: number): number {
  let start = exchangeStart;
  // The latest assistant text stays in the tail even when it came before the latest user message.
  const hasTextAfter = messages.slice(exchangeStart).some((m) => m.role === 'assistant' && messageText(m).trim() !== '');
  if (!hasTextAfter) {
    for (let i = exchangeStart - 1; i >= 0; i--) {
      const m = messages[i]!;
      if (m.role === 'assistant' && messageText(m).trim() !== '') {
        start = i;
        break;
      }
      if (m.role === 'user' && !isToolImagesMessage(m, messages[i - 1]?.role)) break;
    }
  }
  if (start === messages.length && start > 0) start = alignToGroupStart(messages, start - 1);
  return alignToGroupStart(messages, start);
}

function headBoundary(messages: readonly ChatMessage[], systemEnd: number, summaryIndex: number, options: LayoutOptions): number {
  // A head that does not open with the user is not kept: the first message after the system prompt must be a user's.
  if (summaryIndex >= 0 || options.protectFirstN <= 0 || messages[systemEnd]?.role !== 'user') return systemEnd;
  let end = systemEnd;
  let taken = 0;
  while (end < messages.length && taken < options.protectFirstN) {
    end = groupEnd(messages, end);
    taken++;
  }
  // A head too large to protect is summarised like the rest (the summary carries it).
  return rangeTokens(messages, systemEnd, end, options.tokens, options.model) > options.maxHeadTokens ? systemEnd : end;
}

function walkTail(messages: readonly ChatMessage[], start: number, floorIndex: number, options: LayoutOptions): { tailStart: number; trimmed: number[] } {
  const n = messages.length;
  let tailStart = start;
  let acc = rangeTokens(messages, start, n, options.tokens, options.model);
  const trimmed: number[] = [];
  while (tailStart > floorIndex) {
    const groupStart = Math.max(alignToGroupStart(messages, tailStart - 1), floorIndex);
    const tokens = rangeTokens(messages, groupStart, tailStart, options.tokens, options.model);
    const underFloor = n - tailStart < options.protectLastN;
    if (acc + tokens <= options.tailBudget || (underFloor && acc + tokens <= options.tailCeiling)) {
      acc += tokens;
    } else if (underFloor) {
      const trimmedTokens = trimmedGroupTokens(messages, groupStart, tailStart, options.tokens, options.model);
      if (trimmedTokens === null || acc + trimmedTokens > options.tailCeiling) break;
      acc += trimmedTokens;
      for (let i = groupStart; i < tailStart; i++) if (messages[i]!.role === 'tool') trimmed.push(i);
    } else break;
    tailStart = groupStart;
  }
  return { tailStart, trimmed };
}

function trimmedGroupTokens(messages: readonly ChatMessage[], from: number, to: number, tokens: TokenCounter, model?: string): number | null {
  if (!messages.slice(from, to).some((m) => m.role === 'tool' || hasToolCalls(m))) return null;
  let total = 0;
  for (let i = from; i < to; i++) {
    const m = messages[i]!;
    total += m.role === 'tool' ? tokens.messageTokens({ ...m, content: trimToolResult(m.content, TAIL_TRIM_CHARS, factsOfMessage(m, tokens.memos)) }, model) : tokens.messageTokens(m, model);
  }
  return total;
}
