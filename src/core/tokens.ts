import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { countTokens as countCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import type { ChatMessage } from './messages.js';

/** Tokens every message costs beyond its content (role and separators), as OpenAI frames chat. */
export const MESSAGE_FRAMING_TOKENS = 4;
/** Tokens that prime the assistant's reply, added once per request. */
export const REPLY_PRIMING_TOKENS = 3;
/** Tokens charged per tool call beyond its name and arguments. */
export const TOOL_CALL_FRAMING_TOKENS = 8;
/** Flat estimate for one image part (a low-detail image). */
export const IMAGE_PART_TOKENS = 85;

/** The BPE encodings chatgate counts with. */
export type EncodingName = 'o200k_base' | 'cl100k_base';

const CL100K_MODEL = /^(gpt-4(?!o|\.1|\.5)(-.*)?|gpt-3\.5.*|text-embedding-(ada-002|3-.*))$/;
const messageCache = new WeakMap<ChatMessage, number>();

/** The encoding of a model: cl100k_base for the GPT-3.5/GPT-4 family, o200k_base otherwise. */
export function encodingForModel(model?: string): EncodingName {
  if (model && CL100K_MODEL.test(model.replace(/^openai\//, ''))) return 'cl100k_base';
  return 'o200k_base';
}

/** Counts the BPE tokens of a text with the model's encoding (o200k_base by default). */
export function countTextTokens(text: string, model?: string): number {
  if (text.length === 0) return 0;
  return encodingForModel(model) === 'cl100k_base' ? countCl100k(text) : countO200k(text);
}

/**
 * Tokens one message costs in a request, framing included. Counted once per message object and
 * remembered (messages are treated as immutable), so a history is never re-tokenized.
 */
export function messageTokens(message: ChatMessage, model?: string): number {
  const encoding = encodingForModel(model);
  if (encoding === 'o200k_base') {
    const cached = messageCache.get(message);
    if (cached !== undefined) return cached;
  }
  const count = countUncached(message, model);
  if (encoding === 'o200k_base') messageCache.set(message, count);
  return count;
}

/** Tokens a list of messages costs in a request: every message with its framing, plus reply priming. */
export function countMessageTokens(messages: readonly ChatMessage[], model?: string): number {
  if (messages.length === 0) return 0;
  let total = REPLY_PRIMING_TOKENS;
  for (const message of messages) total += messageTokens(message, model);
  return total;
}

function countUncached(message: ChatMessage, model?: string): number {
  let total = MESSAGE_FRAMING_TOKENS;
  const content = message.content;
  if (typeof content === 'string') total += countTextTokens(content, model);
  else if (Array.isArray(content)) {
    for (const part of content) {
      total += part.type === 'text' ? countTextTokens(part.text, model) : IMAGE_PART_TOKENS;
    }
  }
  if (message.role === 'assistant' && message.tool_calls) {
    for (const call of message.tool_calls) {
      total += TOOL_CALL_FRAMING_TOKENS + countTextTokens(call.function.name, model);
      total += countTextTokens(call.function.arguments, model);
    }
  }
  if (message.role === 'tool') total += 2;
  return total;
}
