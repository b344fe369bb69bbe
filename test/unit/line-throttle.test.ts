import { describe, expect, it } from 'vitest';
import { createLineThrottle } from '../../src/log.js';

describe('createLineThrottle', () => {
  it('lets one line per key through per interval and counts the ones it held back', () => {
    let now = 0;
    const throttle = createLineThrottle({ intervalMs: 60_000, now: () => now });
    expect([throttle.admit('a'), throttle.admit('a'), throttle.admit('b'), throttle.admit('a')]).toEqual([0, null, 0, null]);
    now = 59_999;
    expect(throttle.admit('a')).toBeNull();
    now = 60_000;
    expect([throttle.admit('a'), throttle.admit('b')]).toEqual([3, 0]);
  });

  it('remembers at most maxKeys keys, forgetting the oldest', () => {
    let now = 0;
    const throttle = createLineThrottle({ intervalMs: 60_000, now: () => now, maxKeys: 2 });
    throttle.admit('a');
    now = 1;
    throttle.admit('b');
    throttle.admit('c');
    // `a` was forgotten: its next line goes through at once; `c` is still held.
    expect([throttle.admit('a'), throttle.admit('c')]).toEqual([0, null]);
  });
});
