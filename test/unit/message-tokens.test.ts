import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import type { ChatMessage } from '../../src/core/messages.js';
import { summaryTargetCeiling, summaryTargetTokens } from '../../src/core/compaction/summary-block.js';

import { TokenCounter } from '../../src/core/tokens.js';

/** Texts the cl100k_base counter was asked to count, in order. */
const counted: string[] = [];
const tokens = new TokenCounter({
  loadEncoding: () => (text) => {
    counted.push(text);
    return cl100k(text);
  },
});

function history(n: number, salt: string): ChatMessage[] {
  return Array.from({ length: n }, (_, k): ChatMessage => (k % 2 === 0 ? { role: 'user', content: `ask ${salt} ${k}: where is ORD-${k}?` } : { role: 'assistant', content: `answer ${salt} ${k}` }));
}

describe('message token counts', () => {
  it('counts each message once per encoding, cl100k_base included', () => {
    const messages = history(6, 'once');
    counted.length = 0;
    const first = tokens.countMessages(messages, 'gpt-4');
    expect(counted).toHaveLength(6);
    expect(tokens.countMessages(messages, 'gpt-4')).toBe(first);
    expect(counted).toHaveLength(6);
  });

  it.each([0, 1, 10, 40, 10_000])('countMessageTokensUpTo is exact below a ceiling of %i, and at least the ceiling from it on', (ceiling) => {
    const messages = history(8, `ceiling${ceiling}`);
    const exact = tokens.countMessages(history(8, `ceiling${ceiling}`), 'gpt-4');
    const bounded = tokens.countMessagesUpTo(messages, ceiling, 'gpt-4');
    if (exact < ceiling) expect(bounded).toBe(exact);
    else expect(bounded).toBeGreaterThanOrEqual(ceiling);
  });

  it('countMessageTokensUpTo tokenizes nothing when the messages counted before already reach the ceiling', () => {
    const known = history(10, 'known');
    const total = tokens.countMessages(known, 'gpt-4');
    counted.length = 0;
    const fresh: ChatMessage = { role: 'user', content: 'a message never counted' };
    expect(tokens.countMessagesUpTo([fresh, ...known], total, 'gpt-4')).toBeGreaterThanOrEqual(total);
    expect(counted).toEqual([]);
    expect(tokens.countMessagesUpTo([fresh, ...known], total + 100, 'gpt-4')).toBe(tokens.countMessages([fresh, ...known], 'gpt-4'));
  });
});

describe('summaryTargetCeiling', () => {
  it('is where the summary budget stops growing: counting past it changes nothing', () => {
    fc.assert(fc.property(fc.integer({ min: 1_000, max: 2_000_000 }), fc.integer({ min: 0, max: 5_000_000 }), (window, beyond) => {
      const ceiling = summaryTargetCeiling(window);
      expect(summaryTargetTokens(ceiling + beyond, window)).toBe(summaryTargetTokens(ceiling, window));
      expect(summaryTargetTokens(Number.MAX_SAFE_INTEGER, window)).toBe(summaryTargetTokens(ceiling, window));
    }));
  });
});
