import { createRequire } from 'node:module';
import { TokenCounter, type ChatMessage, type EncodingCounter, type EncodingName } from '../core/index.js';

const requireModule = createRequire(import.meta.url);
// gpt-tokenizer's CommonJS build: loaded synchronously, when a count first needs it.
const ENCODING_MODULES: Record<EncodingName, string> = {
  o200k_base: 'gpt-tokenizer/cjs/encoding/o200k_base',
  cl100k_base: 'gpt-tokenizer/cjs/encoding/cl100k_base',
};

/** Loads an encoding's gpt-tokenizer table (synchronous, ~35–55 MiB) and returns its counter. */
export function loadEncoding(name: EncodingName): EncodingCounter {
  const module = requireModule(ENCODING_MODULES[name]) as { countTokens: EncodingCounter };
  return module.countTokens;
}

/**
 * A token counter that counts for every model: {@link loadEncoding} loads an encoding's table when
 * a count first needs it, and the encodings of `models` (the configured ones) are loaded now, so
 * the first turn does not wait for a table. Encodings no model needs stay unloaded until a count
 * asks for one (a session stored under another model). A process creates one and passes it on.
 */
export function createTokenCounter(models: ReadonlyArray<string | undefined> = []): TokenCounter {
  const counter = new TokenCounter({ loadEncoding });
  for (const model of models) counter.counterFor(model);
  return counter;
}

/**
 * Tokens a text costs with the model's encoding ({@link TokenCounter.countText}), counted by
 * `counter`; without one, by a counter created for this call (nothing is remembered between calls).
 */
export function countTextTokens(text: string, model?: string, counter: TokenCounter = createTokenCounter()): number {
  return counter.countText(text, model);
}

/**
 * Tokens a list of messages costs in a request ({@link TokenCounter.countMessages}), counted by
 * `counter`; without one, by a counter created for this call. Pass one to count each message once.
 */
export function countMessageTokens(messages: readonly ChatMessage[], model?: string, counter: TokenCounter = createTokenCounter()): number {
  return counter.countMessages(messages, model);
}
