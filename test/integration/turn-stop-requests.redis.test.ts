import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sessionKeys, type SessionKeys } from '../../src/redis/keys.js';
import { acquireLease } from '../../src/redis/lease.js';
import { requestStop, takeStop } from '../../src/turn-stop/stop-requests.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

describe('stop requests (request-stop-4.lua, take-stop-1.lua)', () => {
  let t: TestRedis;
  let keys: SessionKeys;
  beforeEach(() => {
    t = createTestRedis();
    keys = sessionKeys('web:s1', t.keyPrefix);
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('finds nothing to stop in an idle session, nor while only the gateway holds the lease (a compaction)', async () => {
    expect(await requestStop(t.redis, 'web:s1', keys, { keyPrefix: t.keyPrefix })).toEqual({ state: 'idle' });
    await acquireLease(t.redis, keys);
    expect(await requestStop(t.redis, 'web:s1', keys, { keyPrefix: t.keyPrefix })).toEqual({ state: 'idle' });
    expect(await t.redis.exists(keys.stop)).toBe(0);
  });

  it('targets the running turn by its fence: another turn of the session does not take it', async () => {
    const fence = (await acquireLease(t.redis, keys))!;
    await t.redis.rpush(keys.processing, '{}');
    expect(await requestStop(t.redis, 'web:s1', keys, { keyPrefix: t.keyPrefix })).toEqual({ state: 'running', fence });
    expect(await t.redis.pttl(keys.stop)).toBeGreaterThan(0);
    expect(await takeStop(t.redis, keys, fence + 1)).toBe(false);
    expect(await takeStop(t.redis, keys, fence)).toBe(true);
    expect(await takeStop(t.redis, keys, fence)).toBe(false);
  });

  it('reaches the turn that resumes a dead turn\'s messages on another worker (a later fence), not a new turn', async () => {
    const fence = (await acquireLease(t.redis, keys, 50))!;
    await t.redis.rpush(keys.processing, JSON.stringify({ id: 'web:s1:m1' }));
    expect(await requestStop(t.redis, 'web:s1', keys, { keyPrefix: t.keyPrefix })).toEqual({ state: 'running', fence });
    // A new turn (other messages) under a later fence does not take it; the turn resuming m1 does.
    expect(await takeStop(t.redis, keys, fence + 1, 'web:s1:m2')).toBe(false);
    expect(await takeStop(t.redis, keys, fence + 1, 'web:s1:m1')).toBe(true);
    expect(await t.redis.exists(keys.stop)).toBe(0);
  });

  it('stops the next turn when messages still wait for one', async () => {
    await t.redis.rpush(keys.inbox, '{}');
    expect(await requestStop(t.redis, 'web:s1', keys, { keyPrefix: t.keyPrefix })).toEqual({ state: 'queued' });
    expect(await takeStop(t.redis, keys, 7)).toBe(true);
    expect(await t.redis.exists(keys.stop)).toBe(0);
  });

  it('refuses bad options without writing', async () => {
    await t.redis.rpush(keys.inbox, '{}');
    await expect(requestStop(t.redis, 'web:s1', keys, { keyPrefix: t.keyPrefix, ttlMs: 0 })).rejects.toThrow(/ttlMs must be a number/);
    expect(await t.redis.exists(keys.stop)).toBe(0);
  });
});
