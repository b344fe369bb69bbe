import { createRequire } from 'node:module';
import { encodingForModel, useEncodingLoader, tokenCounterFor, type EncodingName, type TokenCounter } from '../core/tokens.js';

const requireModule = createRequire(import.meta.url);
// gpt-tokenizer's CommonJS build: loaded synchronously, when a count first needs it.
const ENCODING_MODULES: Record<EncodingName, string> = {
  o200k_base: 'gpt-tokenizer/cjs/encoding/o200k_base',
  cl100k_base: 'gpt-tokenizer/cjs/encoding/cl100k_base',
};

/** Loads an encoding's gpt-tokenizer table (synchronous, ~35–55 MiB) and returns its counter. */
export function loadEncoding(name: EncodingName): TokenCounter {
  const module = requireModule(ENCODING_MODULES[name]) as { countTokens: TokenCounter };
  return module.countTokens;
}

/**
 * Installs {@link loadEncoding} as the token counter's loader (src/core/tokens.ts) and loads now
 * the encodings of `models` (the configured ones), so the first turn does not wait for a table.
 * Encodings no model needs stay unloaded until a count asks for one (a session stored under
 * another model). Idempotent.
 */
export function installEncodings(models: ReadonlyArray<string | undefined> = []): void {
  useEncodingLoader(loadEncoding);
  for (const model of models) {
    if (encodingForModel(model) !== 'o200k_base') tokenCounterFor(model);
  }
}
