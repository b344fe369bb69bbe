import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatMessage } from './messages.js';
import { MessageMemos } from './compaction/message-memo.js';
import { headEnd } from './text.js';
import { IMAGE_PART_TOKENS, MESSAGE_FRAMING_TOKENS, REPLY_PRIMING_TOKENS, TOOL_CALL_FRAMING_TOKENS } from './token-framing.js';

// The framing constants live in ./token-framing.js, which readers of stored figures import without the tokenizer.
export { IMAGE_PART_TOKENS, MESSAGE_FRAMING_TOKENS, REPLY_PRIMING_TOKENS, TOOL_CALL_FRAMING_TOKENS } from './token-framing.js';

/** The BPE encodings chatgate counts with. */
export type EncodingName = 'o200k_base' | 'cl100k_base';
/** Counts the BPE tokens of one text in one encoding. */
export type EncodingCounter = (text: string) => number;
/**
 * Gives the counter of an encoding that is not loaded yet; called synchronously, once per
 * encoding and {@link TokenCounter}, the first time a count needs it. Given by the caller
 * (src/llm/encodings.ts): this module loads nothing but o200k_base, its default.
 */
export type EncodingLoader = (name: EncodingName) => EncodingCounter;

/** Options of {@link TokenCounter}. */
export interface TokenCounterOptions {
  /**
   * Loads the encodings other than o200k_base (cl100k_base: GPT-3.5 and GPT-4), so that their
   * tables (~35 MiB each) are in memory only in processes that count with them. Default: none,
   * and counting with such an encoding throws.
   */
  loadEncoding?: EncodingLoader;
  /** Where the per-message counts are remembered. Default: a store of this counter's own. */
  memos?: MessageMemos;
}

const CL100K_MODEL = /^(gpt-4(?!o|\.1|\.5)(-.*)?|gpt-3\.5.*|text-embedding-(ada-002|3-.*))$/;

/** The encoding of a model: cl100k_base for the GPT-3.5/GPT-4 family, o200k_base otherwise. */
export function encodingForModel(model?: string): EncodingName {
  if (model && CL100K_MODEL.test(model.replace(/^openai\//, ''))) return 'cl100k_base';
  return 'o200k_base';
}

/**
 * Longest text (UTF-16 units) handed to the BPE tokenizer in one piece. Its work grows with the
 * square of a piece without spaces (1 MB of emoji took minutes), so longer texts are counted in
 * chunks of about this size, cut at whitespace when there is some near the cut.
 */
export const TOKENIZE_CHUNK_CHARS = 2_000;
/** Longest text counted exactly; beyond it the rest is estimated from the counted part's ratio. */
export const MAX_COUNTED_CHARS = 256_000;

/**
 * Counts tokens as a model's request costs them, with the encodings it has loaded and the
 * per-message counts it remembers. Its owner creates it (src/llm/encodings.ts `createTokenCounter`
 * gives one that loads every encoding) and passes it to what counts, so a history is tokenized once.
 */
export class TokenCounter {
  /** The per-message memos (token counts, fact scans) this counter fills. */
  readonly memos: MessageMemos;
  private readonly counters = new Map<EncodingName, EncodingCounter>([['o200k_base', countO200k]]);
  private readonly loadEncoding: EncodingLoader | undefined;

  constructor(options: TokenCounterOptions = {}) {
    this.loadEncoding = options.loadEncoding;
    this.memos = options.memos ?? new MessageMemos();
  }

  /**
   * The counter of a model's encoding, loaded on first use through the encoding loader.
   * @throws Error when the encoding is not loaded and there is no loader.
   */
  counterFor(model?: string): EncodingCounter {
    const name = encodingForModel(model);
    const known = this.counters.get(name);
    if (known) return known;
    if (!this.loadEncoding) throw new Error(`counting tokens for model ${model ?? '(default)'} needs the ${name} encoding, which is not loaded (create the token counter with an encoding loader: createTokenCounter of src/llm/encodings.ts)`);
    const loaded = this.loadEncoding(name);
    this.counters.set(name, loaded);
    return loaded;
  }

  /**
   * Counts the BPE tokens of a text with the model's encoding (o200k_base by default). A text over
   * {@link TOKENIZE_CHUNK_CHARS} is counted in chunks (exact but for a token or so per cut); past
   * {@link MAX_COUNTED_CHARS} the rest is estimated at the ratio of the counted part, never below
   * one token per 4 characters. Cost is linear in the length, whatever the text.
   */
  countText(text: string, model?: string): number {
    return text.length === 0 ? 0 : countWith(text, this.counterFor(model));
  }

  /**
   * Tokens one message costs in a request, framing included. Counted once per message object and
   * encoding, and remembered (messages are treated as immutable), so a history is never re-tokenized.
   */
  messageTokens(message: ChatMessage, model?: string): number {
    return this.framedTokens(message, encodingForModel(model), model);
  }

  /** Tokens a list of messages costs in a request: every message with its framing, plus reply priming. */
  countMessages(messages: readonly ChatMessage[], model?: string): number {
    if (messages.length === 0) return 0;
    const encoding = encodingForModel(model);
    let total = REPLY_PRIMING_TOKENS;
    for (const message of messages) total += this.framedTokens(message, encoding, model);
    return total;
  }

  /**
   * Like {@link countMessages} when the answer is below `ceiling`; otherwise some figure at or
   * above it. Messages already counted are summed first, so deciding that a list mostly counted
   * before is past the ceiling tokenizes nothing.
   */
  countMessagesUpTo(messages: readonly ChatMessage[], ceiling: number, model?: string): number {
    if (messages.length === 0) return 0;
    const encoding = encodingForModel(model);
    let total = REPLY_PRIMING_TOKENS;
    const uncounted: ChatMessage[] = [];
    for (const message of messages) {
      const memo = this.memos.peek(message);
      if (memo !== undefined && memo.tokensEncoding === encoding) total += memo.tokens;
      else uncounted.push(message);
    }
    for (const message of uncounted) {
      if (total >= ceiling) break;
      total += this.framedTokens(message, encoding, model);
    }
    return total;
  }

  private framedTokens(message: ChatMessage, encoding: EncodingName, model?: string): number {
    const memo = this.memos.of(message);
    if (memo.tokensEncoding === encoding) return memo.tokens;
    const tokens = countUncached(message, this.counterFor(model));
    memo.tokens = tokens;
    memo.tokensEncoding = encoding;
    return tokens;
  }
}

/** Where the chunk from `start` ends: at whitespace near `limit` if any, else at `limit`, never inside a surrogate pair. */
function chunkEnd(text: string, start: number, limit: number): number {
  if (limit >= text.length) return text.length;
  const floor = start + Math.floor((limit - start) * 0.9);
  for (let k = limit; k > floor; k--) {
    if (/\s/.test(text.charAt(k))) return k;
  }
  const end = headEnd(text, limit);
  return end > start ? end : limit;
}

function countUncached(message: ChatMessage, count: EncodingCounter): number {
  let total = MESSAGE_FRAMING_TOKENS;
  const content = message.content;
  if (typeof content === 'string') total += countWith(content, count);
  else if (Array.isArray(content)) {
    for (const part of content) {
      total += part.type === 'text' ? countWith(part.text, count) : IMAGE_PART_TOKENS;
    }
  }
  if (message.role === 'assistant' && message.tool_calls) {
    for (const call of message.tool_calls) {
      total += TOOL_CALL_FRAMING_TOKENS + countWith(call.function.name, count);
      total += countWith(call.function.arguments, count);
    }
  }
  if (message.role === 'tool') total += 2;
  return total;
}

/** {@link TokenCounter.countText} with the counter already chosen. */
function countWith(text: string, count: EncodingCounter): number {
  if (text.length === 0) return 0;
  if (text.length <= TOKENIZE_CHUNK_CHARS) return count(text);
  let tokens = 0;
  let at = 0;
  const counted = Math.min(text.length, MAX_COUNTED_CHARS);
  while (at < counted) {
    const end = chunkEnd(text, at, Math.min(text.length, at + TOKENIZE_CHUNK_CHARS));
    tokens += count(text.slice(at, end));
    at = end;
  }
  if (at >= text.length) return tokens;
  const rest = text.length - at;
  return tokens + Math.ceil(rest * Math.max(tokens / at, 1 / 4));
}
