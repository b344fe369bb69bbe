import { extractFacts, factsOfMessage } from './facts.js';
import type { MessageMemos } from './message-memo.js';
import { hasToolCalls, isChatgateText, type ChatMessage, type ToolCall } from '../messages.js';

/** Tool results longer than this (characters) are pruned to a one-line description. */
export const PRUNE_MIN_CHARS = 200;
/** Tool-call arguments longer than this (characters) are shortened. */
export const MAX_ARGUMENT_CHARS = 600;
/** How many identifiers a prune note keeps (the rest stay in the fact ledger and get pinned). */
export const NOTE_IDS = 5;

const ARG_VALUE_CHARS = 160;
/** Characters of each end of a tool result that the duplicate check's key reads. */
const KEY_END_CHARS = 48;

/**
 * Prunes `messages[from, to)`: an older tool result identical to a later one becomes a duplicate
 * note, a long tool result a one-line description keeping a handful of its identifiers, and long
 * tool-call arguments are shortened without breaking their JSON. Returns a new array; changed
 * messages are new objects, the others are the same objects.
 */
export function pruneRange(messages: readonly ChatMessage[], from: number, to: number, memos: MessageMemos): ChatMessage[] {
  const callNames = toolCallIndex(messages);
  const later = new LaterContents();
  const out = messages.slice();
  for (let i = messages.length - 1; i >= from; i--) {
    const message = messages[i]!;
    if (message.role === 'tool') {
      const seenLater = later.add(message.content);
      if (i >= to || isChatgateText(message.content)) continue;
      const name = callNames.get(message.tool_call_id);
      if (message.content.length > 40 && seenLater) {
        out[i] = { ...message, content: `[chatgate:duplicate] same result as a later ${name?.name ?? 'tool'} call` };
      } else if (message.content.length > PRUNE_MIN_CHARS) {
        out[i] = { ...message, content: describeToolResult(message.content, name, factsOfMessage(message, memos)) };
      }
    } else if (hasToolCalls(message) && i < to) {
      const calls = message.tool_calls.map(shortenCall);
      if (calls.some((call, k) => call !== message.tool_calls[k])) out[i] = { ...message, tool_calls: calls };
    }
  }
  return out;
}

/**
 * Trims a tool result to a head-and-tail excerpt of about `maxChars`, marked as trimmed, keeping the
 * identifiers it contained. Results already short enough are returned unchanged.
 */
export function trimToolResult(content: string, maxChars: number, facts?: readonly string[]): string {
  if (content.length <= maxChars || isChatgateText(content)) return content;
  const ids = (facts ?? extractFacts(content)).slice(0, NOTE_IDS);
  const headChars = Math.max(0, Math.floor(maxChars * 0.6));
  const tailChars = Math.max(0, Math.floor(maxChars * 0.25));
  const idPart = ids.length > 0 ? `; ids: ${ids.join(', ')}` : '';
  const head = content.slice(0, headChars);
  const tail = tailChars > 0 ? content.slice(-tailChars) : '';
  return `[chatgate:trimmed ${formatCount(content.length)} chars${idPart}]\n${head}\n[…]\n${tail}`;
}

/** The one-line description a pruned tool result becomes. */
export function describeToolResult(content: string, call?: { name: string; arguments: string }, facts?: readonly string[]): string {
  const ids = (facts ?? extractFacts(content)).slice(0, NOTE_IDS);
  const args = call ? summariseArguments(call.arguments) : '';
  const label = call ? `${call.name}${args ? ` ${args}` : ''}` : 'tool';
  const idPart = ids.length > 0 ? `; ids: ${ids.join(', ')}` : '';
  return `[chatgate:pruned] [${label}] → ${formatCount(content.length)} chars${idPart}`;
}

function toolCallIndex(messages: readonly ChatMessage[]): Map<string, { name: string; arguments: string }> {
  const index = new Map<string, { name: string; arguments: string }>();
  for (const message of messages) {
    if (!hasToolCalls(message)) continue;
    for (const call of message.tool_calls) index.set(call.id, call.function);
  }
  return index;
}

function shortenCall(call: ToolCall): ToolCall {
  const args = call.function.arguments;
  if (args.length <= MAX_ARGUMENT_CHARS) return call;
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return call; // not JSON: leave it as the model wrote it rather than invent a shape
  }
  const shortened = JSON.stringify(shortenValue(parsed));
  if (shortened.length >= args.length) return call;
  return { ...call, function: { ...call.function, arguments: shortened } };
}

function shortenValue(value: unknown): unknown {
  if (typeof value === 'string') {
    return value.length > ARG_VALUE_CHARS ? `${value.slice(0, ARG_VALUE_CHARS)}…[chatgate: ${value.length} chars]` : value;
  }
  if (Array.isArray(value)) {
    const items = value.slice(0, 8).map(shortenValue);
    if (value.length > 8) items.push(`…[chatgate: ${value.length - 8} more items]`);
    return items;
  }
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shortenValue(v)]));
  }
  return value;
}

function summariseArguments(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const parts = Object.entries(parsed)
        .slice(0, 3)
        .map(([k, v]) => `${k}=${String(typeof v === 'object' ? JSON.stringify(v) : v).slice(0, 40)}`);
      return parts.join(' ');
    }
  } catch {
    // fall through: show nothing rather than a broken excerpt
  }
  return '';
}

function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Tool results seen later in the history, looked up by a cheap key before comparing whole texts. */
class LaterContents {
  private readonly byKey = new Map<number, string[]>();

  /** Adds a result; true when an equal one was added before. */
  add(content: string): boolean {
    const key = keyOf(content);
    const bucket = this.byKey.get(key);
    if (!bucket) {
      this.byKey.set(key, [content]);
      return false;
    }
    if (bucket.includes(content)) return true;
    bucket.push(content);
    return false;
  }
}

/** A hash of a text's length and both its ends: equal texts have equal keys; building it copies nothing. */
function keyOf(content: string): number {
  let hash = Math.imul(0x811c9dc5 ^ content.length, 0x01000193);
  const head = Math.min(content.length, KEY_END_CHARS);
  for (let i = 0; i < head; i++) hash = Math.imul(hash ^ content.charCodeAt(i), 0x01000193);
  for (let i = Math.max(head, content.length - KEY_END_CHARS); i < content.length; i++) hash = Math.imul(hash ^ content.charCodeAt(i), 0x01000193);
  return hash;
}
