import { describe, expect, it } from 'vitest';
import { CHATGATE_MARK } from '../../src/core/messages.js';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { TokenCounter, TOKENIZE_CHUNK_CHARS } from '../../src/core/tokens.js';
import { capToolResult } from '../../workers/model-request.js';

const TOKENS = new TokenCounter();
const MB = 1_000_000;
// 1 MB (UTF-8) of emoji: 250,000 four-byte code points, 500,000 UTF-16 units, no space anywhere.
const EMOJI = Array.from({ length: MB / 4 }, (_, k) => String.fromCodePoint(0x1f600 + (k % 80))).join('');
const NO_SPACES = 'x7Qz'.repeat(MB / 4);

function wellFormed(text: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

describe('token counting of texts without spaces', () => {
  it.each([['1 MB of emoji', EMOJI], ['1 MB without spaces', NO_SPACES]])('counts %s at one token per 4 characters or more, in bounded time', (_name, text) => {
    expect(TOKENS.countText(text)).toBeGreaterThanOrEqual(text.length / 4);
  }, 20_000);

  it('counts a long text of words as the tokenizer does whole, within one token per chunk', () => {
    const words = Array.from({ length: 4_000 }, (_, k) => `word${k % 97} and more`).join(' ');
    const chunks = Math.ceil(words.length / TOKENIZE_CHUNK_CHARS);
    expect(Math.abs(TOKENS.countText(words) - countTokens(words))).toBeLessThanOrEqual(chunks);
  });
});

describe('capToolResult', () => {
  it.each([['1 MB of emoji', EMOJI], ['1 MB without spaces', NO_SPACES]])('caps %s to the cap, cut on code points, marked', (_name, text) => {
    const capped = capToolResult(text, 4_000, TOKENS);
    expect(TOKENS.countText(capped)).toBeLessThanOrEqual(4_000);
    expect(capped.length).toBeLessThan(text.length / 10);
    expect(capped).toContain(`${CHATGATE_MARK}trimmed]`);
    expect(wellFormed(capped)).toBe(true);
  }, 20_000);

  it('never cuts a surrogate pair in two, whatever the cap', () => {
    const text = `a${'😀'.repeat(5_000)}`;
    for (const cap of [100, 333, 1_001]) expect(wellFormed(capToolResult(text, cap, TOKENS))).toBe(true);
  });

  it('keeps a result under the cap as it is', () => {
    expect(capToolResult('short result', 100, TOKENS)).toBe('short result');
  });
});
