import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { claimInbox } from '../../src/redis/inbox.js';
import { acceptInbound } from '../../src/redis/ingest.js';
import { seenKey, type SessionKeys } from '../../src/redis/keys.js';
import { acquireLease } from '../../src/redis/lease.js';
import { runScript, runScriptWithOptions } from '../../src/redis/scripts.js';
import { createSessionStore, toEntry, type SessionStore } from '../../src/redis/session-store.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { TokenCounter } from '../../src/core/tokens.js';

const TOKENS = new TokenCounter();

const SESSION = 'web:scripts';

const message: InboundMessage = {
  id: 'web:scripts:1', channel: 'web', chatId: 'scripts', userId: 'u', userName: 'U', text: 'hello', attachments: [], receivedAt: 1_700_000_000_000,
};

describe('Lua scripts validate before they write', () => {
  let t: TestRedis;
  let store: SessionStore;
  let keys: SessionKeys;

  beforeEach(() => {
    t = createTestRedis();
    store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix });
    keys = store.keys(SESSION);
  });

  afterEach(() => t.cleanup());

  /** Every key of the session and its values, to compare before and after a refused script. */
  async function snapshot(): Promise<Record<string, unknown>> {
    const found = (await t.redis.keys(`${t.keyPrefix}*`)).sort();
    const out: Record<string, unknown> = {};
    for (const key of found) {
      const type = await t.redis.type(key);
      if (type === 'hash') out[key] = await t.redis.hgetall(key);
      else if (type === 'list') out[key] = await t.redis.lrange(key, 0, -1);
      else if (type === 'zset') out[key] = await t.redis.zrange(key, '0', '-1', 'WITHSCORES');
      else if (type === 'stream') out[key] = await t.redis.xlen(key);
      else out[key] = await t.redis.get(key);
    }
    return out;
  }

  it('a commit with a malformed transcript item changes nothing (the history is not dropped first)', async () => {
    const fence = (await acquireLease(t.redis, keys))!;
    await store.commit(SESSION, { expectedVersion: 0, fence, projection: { append: [toEntry({ role: 'user', content: 'kept' }, TOKENS)] } });
    const before = await snapshot();
    const items = [JSON.stringify(toEntry({ role: 'user', content: 'new' }, TOKENS)), '{"no type": true}'];
    const options = {
      expectedVersion: 1, fence: String(fence), mode: 'replace', projectionTokens: 3, transcriptRetention: 0, meta: {}, usageIncr: {}, usageSet: {},
      finishTurn: false, nowMs: Date.now(), entries: 1, transcript: 1, outbox: 0,
    };
    const commitKeys = [keys.history, keys.transcript, keys.meta, keys.usage, keys.lease, keys.processing, keys.outbox, `${keys.usage}-h`, `${keys.usage}-d`];
    await expect(runScriptWithOptions(t.redis, 'commitSession', commitKeys, options, items)).rejects.toThrow(/transcript item 1 has no string type/);
    await expect(runScriptWithOptions(t.redis, 'commitSession', commitKeys, { ...options, transcript: 0, entries: 2 }, items.slice(0, 1))).rejects.toThrow(/expected 2 items, got 1/);
    await expect(runScriptWithOptions(t.redis, 'commitSession', commitKeys, { ...options, transcript: 0, usageIncr: { calls: 1.5 } }, items.slice(0, 1))).rejects.toThrow(/usageIncr/);
    await expect(runScriptWithOptions(t.redis, 'commitSession', commitKeys, { ...options, transcript: 0, rollup: { format: 2, fields: {}, expireAtMs: [1, 1] } }, items.slice(0, 1))).rejects.toThrow(/rollup.format must be 1/);
    await expect(runScriptWithOptions(t.redis, 'commitSession', commitKeys, { ...options, transcript: 0, rollup: { format: 1, fields: { a: 0.5 }, expireAtMs: [1, 1] } }, items.slice(0, 1))).rejects.toThrow(/rollup.fields/);
    await expect(store.commit(SESSION, { expectedVersion: 1, fence, usage: { incr: { calls: Number.NaN }, set: {} } })).rejects.toThrow(/usageIncr/);
    expect(await snapshot()).toEqual(before);
  });

  it('the other scripts refuse invalid options without writing', async () => {
    const before = await snapshot();
    const seen = seenKey(SESSION, message.id, t.keyPrefix);
    await expect(runScriptWithOptions(t.redis, 'ingestInbound', [seen, keys.inbox, seen, keys.meta, keys.history, seen, seen], { ttlSeconds: 0, seenValue: '1', nowMs: 1, counters: 0, fields: ['limits'] }, [JSON.stringify(message), SESSION])).rejects.toThrow(/ttlSeconds/);
    await expect(runScriptWithOptions(t.redis, 'acquireLease', [keys.lease, keys.meta], { ttlMs: 'soon' })).rejects.toThrow(/ttlMs/);
    await expect(runScriptWithOptions(t.redis, 'deadLetterProcessing', [keys.processing, keys.failed, keys.lease, keys.meta, keys.outbox], { fence: 1, retention: 10 }, [''])).rejects.toThrow(/fence/);
    await expect(runScript(t.redis, 'renewLease', [keys.lease], ['not json'])).rejects.toThrow(/options must be a JSON object/);
    expect(await snapshot()).toEqual(before);
    await expect(runScript(t.redis, 'claimInbox', [keys.inbox])).rejects.toThrow('script claimInbox takes 3 keys (got 1)');
  });

  it('a script runs on a new connection too (defined on first use) and accepts a message once', async () => {
    const other = t.redis.duplicate();
    try {
      expect((await acceptInbound(other, { sessionId: SESSION, message, keyPrefix: t.keyPrefix, nowMs: Date.now() })).kind).toBe('accepted');
      expect((await acceptInbound(t.redis, { sessionId: SESSION, message, keyPrefix: t.keyPrefix, nowMs: Date.now() })).kind).toBe('duplicate');
      expect(await t.redis.lrange(keys.inbox, 0, -1)).toEqual([JSON.stringify(message)]);
      expect(await t.redis.ttl(seenKey(SESSION, message.id, t.keyPrefix))).toBeGreaterThan(86_000);
    } finally {
      other.disconnect();
    }
  });

  it('holdClaim: one holder at a time; its holder renews and releases it, another neither takes nor releases it', async () => {
    const claim = (holder: string, ttlMs: number) => runScriptWithOptions(t.redis, 'holdClaim', [`${t.keyPrefix}claim`, `${t.keyPrefix}claim:yielding`], { holder, ttlMs });
    expect(await claim('a', 60_000)).toBe(1);
    expect(await claim('b', 60_000)).toBe(0);
    expect(await claim('b', 0)).toBe(0);
    await t.redis.pexpire(`${t.keyPrefix}claim`, 1000);
    expect(await claim('a', 60_000)).toBe(1);
    expect(await t.redis.pttl(`${t.keyPrefix}claim`)).toBeGreaterThan(1000);
    await expect(claim('a', -1)).rejects.toThrow(/ttlMs must be an integer >= 0/);
    expect(await claim('a', 0)).toBe(1);
    expect(await claim('b', 60_000)).toBe(1);
    expect(await t.redis.get(`${t.keyPrefix}claim`)).toBe('b');
  });

  it('accepts half an emoji into the inbox as U+FFFD, so the claim never dead-letters it', async () => {
    const half = { ...message, id: 'web:scripts:half', userName: 'Ann \ud83d', text: 'price \ud83d\ude00 and half \ude00' };
    expect((await acceptInbound(t.redis, { sessionId: SESSION, message: half, keyPrefix: t.keyPrefix, nowMs: 1 })).kind).toBe('accepted');
    const claimed = await claimInbox(t.redis, keys);
    expect(claimed.map((m) => [m.userName, m.text])).toEqual([['Ann \ufffd', 'price 😀 and half \ufffd']]);
    expect(await t.redis.llen(keys.failed)).toBe(0);
  });
});
