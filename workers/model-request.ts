import { headEnd, tailStart, toWellFormedText } from '../src/core/text.js';
import type { InboundMessage } from '../src/core/inbound.js';
import { CHATGATE_MARK, type ChatMessage } from '../src/core/messages.js';
import { REPLY_PRIMING_TOKENS, type TokenCounter } from '../src/core/tokens.js';
import type { ToolSchema } from '../src/llm/client.js';
import type { ReadFiles } from './attachments.js';

/** Share of the context window one tool result may take when it enters the projection. */
export const TOOL_RESULT_SHARE = 0.25;
/** Share of the context window all results of one round may take together. */
export const TOOL_ROUND_SHARE = 0.4;

/** Token cap of each of `count` tool results of one round: min(25%, 40% ÷ count) of the window. */
export function toolResultCap(contextWindow: number, count: number): number {
  return Math.floor(contextWindow * Math.min(TOOL_RESULT_SHARE, TOOL_ROUND_SHARE / Math.max(1, count)));
}

/**
 * The user message of an inbound message; in groups it names the sender. With `files` (read by
 * workers/attachments.ts) the user's text comes first, then each document's text or transcript,
 * then the images as parts; without, attachments are only listed by name.
 */
export function toUserMessage(message: InboundMessage, files?: Pick<ReadFiles, 'texts' | 'images'>): ChatMessage {
  if (files) return withFiles(message, files);
  let text = message.text;
  if (message.attachments.length > 0) {
    const list = message.attachments.map((a) => a.fileName ?? a.kind).join(', ');
    text += `${text ? '\n' : ''}[attachments: ${list}]`;
  }
  if (message.chatType === 'group') text = `${message.userName}: ${text}`;
  return { role: 'user', content: text };
}

function withFiles(message: InboundMessage, files: Pick<ReadFiles, 'texts' | 'images'>): ChatMessage {
  const blocks = [message.text, ...files.texts].filter((block) => block !== '');
  if (message.chatType === 'group') blocks[0] = `${message.userName}: ${blocks[0] ?? ''}`;
  const text = blocks.join('\n\n');
  if (files.images.length === 0) return { role: 'user', content: text };
  return { role: 'user', content: [...(text === '' ? [] : [{ type: 'text' as const, text }]), ...files.images] };
}

/**
 * How many of the fresh messages are a replay of the unanswered user messages that end the
 * projection (a dead-lettered turn whose model never answered, brought back by `chatgate retry`):
 * those are already there and are not appended twice. @returns 0 or the length of that run.
 */
export function unansweredReplay(projection: readonly ChatMessage[], fresh: readonly ChatMessage[]): number {
  let start = projection.length;
  while (start > 0 && projection[start - 1]!.role === 'user') start--;
  const run = projection.slice(start);
  if (run.length === 0 || run.length > fresh.length) return 0;
  return run.every((message, k) => JSON.stringify(message.content) === JSON.stringify(fresh[k]!.content)) ? run.length : 0;
}

/**
 * The notes block injected right after the system prompt, or null without notes. It shows the
 * notes as of the last summary (the session's `notesSnapshot`): between compactions it does not
 * change, so a provider's prompt cache serves the request's prefix, and the remember/forget calls
 * in the conversation since carry the changes.
 */
export function notesMessage(notes: Record<string, string>): ChatMessage | null {
  const keys = Object.keys(notes).sort();
  if (keys.length === 0) return null;
  const lines = keys.map((key) => `- ${key}: ${notes[key]}`);
  return {
    role: 'system',
    content: `${CHATGATE_MARK}notes] Notes you saved with the remember tool, as of the last summary (they persist; remember/forget calls after it in the conversation change them):\n${lines.join('\n')}`,
  };
}

/**
 * Tokens of a request outside the projection: system prompt, notes, tool schemas, reply priming.
 * Counted once per distinct text and model (a small cache): the system prompt and the tool set
 * are the same on every model call, and tokenizing the schemas again each time cost a worker
 * more than the rest of the request building.
 */
export function overheadTokens(prefix: readonly ChatMessage[], tools: readonly ToolSchema[], counter: TokenCounter, model?: string): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of prefix) total += cachedCount(`m${JSON.stringify(message)}`, model, () => counter.messageTokens(message, model));
  if (tools.length > 0) total += schemaTokens(tools, counter, model);
  return total;
}

/** The tool set's token count per model, kept per list (the registry hands out the same list until a tool is added). */
const schemaCounts = new WeakMap<readonly ToolSchema[], Map<string | undefined, number>>();

function schemaTokens(tools: readonly ToolSchema[], counter: TokenCounter, model: string | undefined): number {
  let byModel = schemaCounts.get(tools);
  if (!byModel) schemaCounts.set(tools, (byModel = new Map()));
  let tokens = byModel.get(model);
  if (tokens === undefined) byModel.set(model, (tokens = counter.countText(JSON.stringify(tools), model)));
  return tokens;
}

/** Distinct texts whose counts {@link overheadTokens} keeps (least recently used leave first). */
const OVERHEAD_CACHE_SIZE = 64;
const overheadCache = new Map<string, number>();

function cachedCount(text: string, model: string | undefined, count: () => number): number {
  const key = `${model ?? ''}\u0000${text}`;
  const known = overheadCache.get(key);
  if (known !== undefined) {
    overheadCache.delete(key);
    overheadCache.set(key, known);
    return known;
  }
  const tokens = count();
  overheadCache.set(key, tokens);
  if (overheadCache.size > OVERHEAD_CACHE_SIZE) overheadCache.delete(overheadCache.keys().next().value!);
  return tokens;
}

/** Characters per token a tool result may have before it is cut by characters without counting it whole. */
const CAP_CHARS_PER_TOKEN = 8;

/**
 * Caps a tool result at `maxTokens`: a head-and-tail excerpt with a marker saying how much was
 * cut, so one giant tool output cannot push a request over the window. A result far over the cap
 * is cut by characters first (on code-point boundaries), so the tokenizer only sees bounded text.
 */
export function capToolResult(raw: string, maxTokens: number, counter: TokenCounter, model?: string): string {
  const text = toWellFormedText(raw); // a tool's half emoji would make Redis refuse the commit
  let keepChars = maxTokens * 4;
  if (text.length <= maxTokens * CAP_CHARS_PER_TOKEN) {
    const tokens = counter.countText(text, model);
    if (tokens <= maxTokens) return text;
    keepChars = Math.floor((text.length * maxTokens) / tokens * 0.9);
  }
  for (;;) {
    const excerpt = excerptOf(text, Math.floor(keepChars / 2));
    if (counter.countText(excerpt, model) <= maxTokens || keepChars < 64) return excerpt;
    keepChars = Math.floor(keepChars * 0.8);
  }
}

function excerptOf(text: string, half: number): string {
  const head = text.slice(0, headEnd(text, half));
  const tail = text.slice(tailStart(text, half));
  return `${head}\n${CHATGATE_MARK}trimmed] ${text.length - head.length - tail.length} of ${text.length} characters cut from this tool result\n${tail}`;
}
