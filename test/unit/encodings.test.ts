import { describe, expect, it, vi } from 'vitest';
import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import type { EncodingName } from '../../src/core/tokens.js';

// The token counter's loader is process state, and files share their worker (vitest `isolate: false`):
// this file imports fresh copies of both modules, whatever other files installed before it.
vi.resetModules();
const { countMessageTokens, countTextTokens, tokenCounterFor, useEncodingLoader } = await import('../../src/core/tokens.js');
const { installEncodings, loadEncoding } = await import('../../src/llm/encodings.js');

const TEXTS = ['Hello there, how are you today?', 'ORD-48213-XK shipped 2026-11-30 → Zürich; 你好 🙂', '{"order":48213,"items":[1,2,3]}'];

// Run in order: the loader installed by one test stays for the next.
describe('encodings loaded on demand', () => {
  it('counts o200k_base models without a loader, and refuses a cl100k_base model', () => {
    for (const text of TEXTS) expect(countTextTokens(text, 'gpt-4o-mini')).toBe(o200k(text));
    expect(() => countTextTokens('hello', 'gpt-4')).toThrow('needs the cl100k_base encoding, which is not loaded');
    expect(countTextTokens('', 'gpt-4')).toBe(0);
  });

  it('asks the loader once, only for the encoding a count needs', () => {
    const asked: EncodingName[] = [];
    useEncodingLoader((name) => {
      asked.push(name);
      return loadEncoding(name);
    });
    countTextTokens('hello', 'gpt-4o');
    countTextTokens('hello', undefined);
    expect(asked).toEqual([]);
    for (const text of TEXTS) expect(countTextTokens(text, 'gpt-4')).toBe(cl100k(text));
    expect(countMessageTokens([{ role: 'user', content: TEXTS[0]! }], 'gpt-3.5-turbo')).toBe(3 + 4 + cl100k(TEXTS[0]!));
    expect(asked).toEqual(['cl100k_base']);
  });

  it('installEncodings keeps the counts and loads what the configured models need', () => {
    installEncodings(['gpt-4o-mini', 'gpt-4-turbo']);
    expect(tokenCounterFor('gpt-4-turbo')(TEXTS[1]!)).toBe(cl100k(TEXTS[1]!));
    expect(tokenCounterFor('gpt-4o-mini')(TEXTS[1]!)).toBe(o200k(TEXTS[1]!));
    expect(loadEncoding('o200k_base')(TEXTS[1]!)).toBe(o200k(TEXTS[1]!));
  });
});
