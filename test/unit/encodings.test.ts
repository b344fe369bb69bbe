import { describe, expect, it } from 'vitest';
import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import { TokenCounter, type EncodingName } from '../../src/core/tokens.js';
import { createTokenCounter, loadEncoding } from '../../src/llm/encodings.js';

const TEXTS = ['Hello there, how are you today?', 'ORD-48213-XK shipped 2026-11-30 → Zürich; 你好 🙂', '{"order":48213,"items":[1,2,3]}'];

describe('encodings loaded on demand', () => {
  it('counts o200k_base models without a loader, and refuses a cl100k_base model', () => {
    const tokens = new TokenCounter();
    for (const text of TEXTS) expect(tokens.countText(text, 'gpt-4o-mini')).toBe(o200k(text));
    expect(() => tokens.countText('hello', 'gpt-4')).toThrow('needs the cl100k_base encoding, which is not loaded');
    expect(tokens.countText('', 'gpt-4')).toBe(0);
  });

  it('asks the loader once, only for the encoding a count needs', () => {
    const asked: EncodingName[] = [];
    const tokens = new TokenCounter({
      loadEncoding: (name) => {
        asked.push(name);
        return loadEncoding(name);
      },
    });
    tokens.countText('hello', 'gpt-4o');
    tokens.countText('hello', undefined);
    expect(asked).toEqual([]);
    for (const text of TEXTS) expect(tokens.countText(text, 'gpt-4')).toBe(cl100k(text));
    expect(tokens.countMessages([{ role: 'user', content: TEXTS[0]! }], 'gpt-3.5-turbo')).toBe(3 + 4 + cl100k(TEXTS[0]!));
    expect(asked).toEqual(['cl100k_base']);
  });

  it('createTokenCounter keeps the counts and loads what the configured models need', () => {
    const tokens = createTokenCounter(['gpt-4o-mini', 'gpt-4-turbo']);
    expect(tokens.counterFor('gpt-4-turbo')(TEXTS[1]!)).toBe(cl100k(TEXTS[1]!));
    expect(tokens.counterFor('gpt-4o-mini')(TEXTS[1]!)).toBe(o200k(TEXTS[1]!));
    expect(loadEncoding('o200k_base')(TEXTS[1]!)).toBe(o200k(TEXTS[1]!));
  });

  it('keeps what one counter loaded and remembered to itself', () => {
    const loaded = new TokenCounter({ loadEncoding });
    const message = { role: 'user' as const, content: TEXTS[1]! };
    expect(loaded.messageTokens(message, 'gpt-4')).toBe(4 + cl100k(TEXTS[1]!));
    const other = new TokenCounter();
    expect(other.memos.peek(message)).toBeUndefined();
    expect(() => other.countText('hello', 'gpt-4')).toThrow('needs the cl100k_base encoding');
  });
});
