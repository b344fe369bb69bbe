import { describe, expect, it } from 'vitest';
import { contextFigures, describeContext, effectiveCompactions, fillOf, isEffectiveCompaction, usableWindowOf } from '../../src/core/index.js';

describe('session figures', () => {
  it.each([
    // window, reserve, tokens, fill
    [16_000, 4_000, 6_000, 0.5],
    [8_192, 0, 2_048, 0.25],
    [4_096, 4_096, 10, 10],
  ])('fill of a window of %i with %i reserved is tokens ÷ usable window', (contextWindow, reservedOutputTokens, tokens, fill) => {
    expect(fillOf(tokens, { contextWindow, reservedOutputTokens })).toBeCloseTo(fill);
    expect(usableWindowOf({ contextWindow, reservedOutputTokens })).toBe(Math.max(1, contextWindow - reservedOutputTokens));
  });

  it('puts both triggers on the usable window, in the tokens the compressor and hygiene compute', () => {
    const figures = contextFigures(5_000, { contextWindow: 16_000, reservedOutputTokens: 4_000 }, { threshold: 0.5, hygieneThreshold: 0.85 });
    expect(figures).toEqual({
      tokens: 5_000, contextWindow: 16_000, reservedOutputTokens: 4_000, usableWindow: 12_000, fill: 5_000 / 12_000,
      compressAt: 0.5, hygieneAt: 0.85, compressTokens: 6_000, hygieneTokens: 10_200,
    });
    expect(describeContext(figures)).toBe('5,000 of 12,000 tokens (41.7%; window 16,000, 4,000 reserved for the answer); compaction at 50% (6,000), hygiene at 85% (10,200)');
  });

  it.each([
    ['compacted', true], ['pruned', true], ['fallback', true], ['noop', false], ['aborted', false],
  ] as const)('counts a %s outcome as a compaction: %s', (outcome, counted) => {
    expect(isEffectiveCompaction(outcome)).toBe(counted);
  });

  it('sums only effective compactions of a ledger', () => {
    expect(effectiveCompactions({ 'in-loop:compacted': 6, 'manual:noop': 5, 'hygiene:pruned': 1, 'reactive:aborted': 2 })).toBe(7);
  });
});
