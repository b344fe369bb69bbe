import { describe, expect, it } from 'vitest';
import {
  backoffDelayMs, classifyFailure, decideRetry, DEFAULT_RETRY_AFTER_MS, isRetryableStatus, parseRetryAfterMs, secondsToMs,
} from '../../src/core/retry.js';

describe('classifyFailure', () => {
  it.each([
    ['network error', { network: true }, { kind: 'transient' }],
    ['no status', {}, { kind: 'transient' }],
    ['429 with retry-after', { status: 429, retryAfterMs: 3_000 }, { kind: 'rate_limited', retryAfterMs: 3_000 }],
    ['429 without retry-after', { status: 429 }, { kind: 'rate_limited', retryAfterMs: DEFAULT_RETRY_AFTER_MS }],
    ['429 with a negative retry-after', { status: 429, retryAfterMs: -5 }, { kind: 'rate_limited', retryAfterMs: DEFAULT_RETRY_AFTER_MS }],
    ['503 with retry-after', { status: 503, retryAfterMs: 2_000 }, { kind: 'transient', retryAfterMs: 2_000 }],
    ['Telegram entity error', { status: 400, description: "Bad Request: can't parse entities: Unsupported start tag \"x\"" }, { kind: 'format_rejected' }],
    ['chat not found', { status: 400, description: 'Bad Request: chat not found' }, { kind: 'permanent' }],
    ['bot blocked', { status: 403, description: 'Forbidden: bot was blocked by the user' }, { kind: 'permanent' }],
    ['unknown channel', { status: 404, description: 'Unknown Channel' }, { kind: 'permanent' }],
    ['unauthorized', { status: 401 }, { kind: 'permanent' }],
    ['425 (not in the set)', { status: 425 }, { kind: 'permanent' }],
    ['408', { status: 408 }, { kind: 'transient' }],
    ['409', { status: 409 }, { kind: 'transient' }],
    ['500', { status: 500 }, { kind: 'transient' }],
    ['502', { status: 502 }, { kind: 'transient' }],
  ])('%s', (_name, failure, expected) => {
    expect(classifyFailure(failure)).toEqual(expected);
  });
});

describe('isRetryableStatus', () => {
  it.each([
    [400, false], [401, false], [403, false], [404, false], [408, true], [409, true], [422, false], [429, true], [500, true], [503, true], [599, true],
  ])('%i → %s', (status, expected) => {
    expect(isRetryableStatus(status)).toBe(expected);
  });
});

describe('backoffDelayMs', () => {
  it.each([
    [1, 500],
    [2, 1_000],
    [3, 2_000],
    [10, 30_000],
  ])('retry %i without jitter waits %i ms', (retry, expected) => {
    expect(backoffDelayMs(retry)).toBe(expected);
  });

  it('jitters within ±jitterRatio and never exceeds maxDelayMs', () => {
    expect(backoffDelayMs(2, { jitterRatio: 0.2 }, 0)).toBe(800);
    expect(backoffDelayMs(2, { jitterRatio: 0.2 }, 0.999)).toBeCloseTo(1_200, -1);
    expect(backoffDelayMs(20, { maxDelayMs: 5_000 }, 0.999)).toBe(5_000);
  });
});

describe('decideRetry', () => {
  const policy = { maxRetries: 2, baseDelayMs: 100, maxDelayMs: 1_000, jitterRatio: 0 };
  it.each([
    ['transient, first retry: backoff', { kind: 'transient' as const }, 0, { retry: true, delayMs: 100 }],
    ['transient, second retry: doubled', { kind: 'transient' as const }, 1, { retry: true, delayMs: 200 }],
    ['transient, retries used up', { kind: 'transient' as const }, 2, { retry: false }],
    ['rate limited: its retry-after', { kind: 'rate_limited' as const, retryAfterMs: 700 }, 0, { retry: true, delayMs: 700 }],
    ['retry-after over the ceiling: capped', { kind: 'rate_limited' as const, retryAfterMs: 99_000 }, 0, { retry: true, delayMs: 1_000 }],
    ['transient with retry-after: honoured', { kind: 'transient' as const, retryAfterMs: 300 }, 1, { retry: true, delayMs: 300 }],
    ['permanent: never', { kind: 'permanent' as const }, 0, { retry: false }],
    ['format rejected: never (resent as plain, not retried)', { kind: 'format_rejected' as const }, 0, { retry: false }],
  ])('%s', (_name, failure, retriesDone, expected) => {
    expect(decideRetry(failure, retriesDone, policy)).toEqual(expected);
  });
});

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it.each([
    ['retry-after-ms wins', { 'retry-after-ms': '250', 'retry-after': '9' }, 250],
    ['retry-after in seconds', { 'retry-after': '3' }, 3_000],
    ['retry-after as an HTTP date', { 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }, 5_000],
    ['a date in the past is 0', { 'retry-after': 'Wed, 31 Dec 2025 23:00:00 GMT' }, 0],
    ['garbage', { 'retry-after': 'soon' }, undefined],
    ['negative', { 'retry-after': '-1' }, undefined],
    ['none', {}, undefined],
  ])('%s', (_name, headers, expected) => {
    expect(parseRetryAfterMs(new Headers(headers), now)).toBe(expected);
  });

  it('turns a platform retry_after in seconds into ms', () => {
    expect(secondsToMs(0.25)).toBe(250);
    expect(secondsToMs(30)).toBe(30_000);
    expect(secondsToMs(undefined)).toBeUndefined();
  });
});
