import { describe, expect, it } from 'vitest';
import { backoffDelayMs, classifyChannelFailure, DEFAULT_RETRY_AFTER_MS } from '../../src/core/retry.js';

describe('classifyChannelFailure', () => {
  it.each([
    ['network error', { network: true }, { kind: 'transient' }],
    ['no status', {}, { kind: 'transient' }],
    ['429 with retry_after', { status: 429, retryAfterSeconds: 3 }, { kind: 'rate_limited', retryAfterMs: 3_000 }],
    ['429 with fractional retry_after', { status: 429, retryAfterSeconds: 0.25 }, { kind: 'rate_limited', retryAfterMs: 250 }],
    ['429 without retry_after', { status: 429 }, { kind: 'rate_limited', retryAfterMs: DEFAULT_RETRY_AFTER_MS }],
    ['Telegram entity error', { status: 400, description: "Bad Request: can't parse entities: Unsupported start tag \"x\"" }, { kind: 'format_rejected' }],
    ['chat not found', { status: 400, description: 'Bad Request: chat not found' }, { kind: 'permanent' }],
    ['bot blocked', { status: 403, description: 'Forbidden: bot was blocked by the user' }, { kind: 'permanent' }],
    ['unknown channel', { status: 404, description: 'Unknown Channel' }, { kind: 'permanent' }],
    ['unauthorized', { status: 401 }, { kind: 'permanent' }],
    ['408', { status: 408 }, { kind: 'transient' }],
    ['409', { status: 409 }, { kind: 'transient' }],
    ['502', { status: 502 }, { kind: 'transient' }],
  ])('%s', (_name, failure, expected) => {
    expect(classifyChannelFailure(failure)).toEqual(expected);
  });
});

describe('backoffDelayMs', () => {
  it.each([
    [1, 500],
    [2, 1_000],
    [3, 2_000],
    [10, 30_000],
  ])('attempt %i without jitter waits %i ms', (attempt, expected) => {
    expect(backoffDelayMs(attempt)).toBe(expected);
  });

  it('jitters within ±jitterRatio and never exceeds maxMs', () => {
    expect(backoffDelayMs(2, { jitterRatio: 0.2 }, 0)).toBe(800);
    expect(backoffDelayMs(2, { jitterRatio: 0.2 }, 0.999)).toBeCloseTo(1_200, -1);
    expect(backoffDelayMs(20, { maxMs: 5_000 }, 0.999)).toBe(5_000);
  });
});
