import { describe, expect, it } from 'vitest';
import { decideIdleCompaction } from '../../../src/core/compaction/idle.js';

describe('decideIdleCompaction', () => {
  // Window 16,000, reserve 0, trigger 0.5: the line is at 8,000 tokens.
  it.each([
    [10, 8_000, 0, true],
    [10, 7_999, 0, false],
    [10, 6_000, 2_500, true],
    [10, 6_000, 1_999, false],
    [10, 6_000, -5_000, false],
    [3, 9_000, 0, false],
  ])('%i messages, request %i, growth %i → %s', (messageCount, requestTokens, expectedGrowthTokens, compact) => {
    const decision = decideIdleCompaction({ messageCount, requestTokens, expectedGrowthTokens, contextWindow: 16_000, threshold: 0.5 });
    expect(decision.compact).toBe(compact);
    expect(decision.nextRequestTokens).toBe(requestTokens + Math.max(0, expectedGrowthTokens));
  });
});
