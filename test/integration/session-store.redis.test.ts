import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StaleCommitError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { acquireLease, releaseLease, renewLease } from '../../src/redis/lease.js';
import { createSessionStore, requestTokens, toEntry, type SessionStore } from '../../src/redis/session-store.js';
import { readTranscript, searchTranscript } from '../../src/redis/transcript.js';
import { callUsageDelta, readUsage } from '../../src/redis/usage.js';
import { sessionIndexKey } from '../../src/redis/keys.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { Writable } from 'node:stream';
import { TokenCounter } from '../../src/core/tokens.js';

const TOKENS = new TokenCounter();

const SESSION = 'telegram:42';

describe('session store', () => {
  let t: TestRedis;
  let store: SessionStore;
  let logLines: Array<Record<string, unknown>>;

  beforeEach(() => {
    t = createTestRedis();
    logLines = [];
    const sink = new Writable({ write(chunk, _enc, done) { logLines.push(JSON.parse(String(chunk))); done(); } });
    store = createSessionStore({ redis: t.redis, logger: createLogger({ destination: sink }) }, { keyPrefix: t.keyPrefix });
  });
  afterEach(async () => { await t.cleanup(); });

  it('keys of one session share one hash tag under the prefix', () => {
    const keys = Object.values(store.keys(SESSION));
    for (const key of keys) expect(key.startsWith(`${t.keyPrefix}{${SESSION}}:`)).toBe(true);
  });

  it('commits projection, transcript, meta and usage together and counts each message once', async () => {
    const fence = (await acquireLease(t.redis, store.keys(SESSION)))!;
    const user = toEntry({ role: 'user', content: 'my order is ORD-48213-XK' }, TOKENS);
    const version = await store.commit(SESSION, {
      expectedVersion: 0, fence, projection: { append: [user] },
      transcript: [{ type: 'message', message: user.message, tokens: user.tokens, atMs: 1 }],
      meta: { lastPromptTokens: 100, appendedTokensSince: user.tokens },
      usage: callUsageDelta('gpt-4o-mini', { promptTokens: 100, completionTokens: 10, cachedTokens: 20 }, 16_000),
    });
    expect(version).toBe(1);
    const snapshot = await store.load(SESSION);
    expect(snapshot.entries).toEqual([user]);
    expect(snapshot.meta.projectionTokens).toBe(user.tokens);
    expect(requestTokens(snapshot)).toBe(100 + user.tokens);
    const usage = await readUsage(t.redis, store.keys(SESSION));
    expect(usage).toMatchObject({ promptTokens: 100, completionTokens: 10, cachedTokens: 20, calls: 1 });
    expect(usage.costMicroUsd).toBeGreaterThan(0);
    expect(await readTranscript(t.redis, store.keys(SESSION))).toHaveLength(1);
    expect((await searchTranscript(t.redis, store.keys(SESSION), 'ord-48213'))[0].type).toBe('message');
    expect(await t.redis.zscore(sessionIndexKey(t.keyPrefix), SESSION)).not.toBeNull();
  });

  it('requestTokens falls back to a full count when there is no provider report', async () => {
    const fence = (await acquireLease(t.redis, store.keys(SESSION)))!;
    const entries = [toEntry({ role: 'user', content: 'hello there' }, TOKENS), toEntry({ role: 'assistant', content: 'hi!' }, TOKENS)];
    await store.commit(SESSION, { expectedVersion: 0, fence, projection: { replace: entries }, meta: { overheadTokens: 50 } });
    const snapshot = await store.load(SESSION);
    expect(requestTokens(snapshot)).toBe(3 + entries[0].tokens + entries[1].tokens + 50);
  });

  it('refuses a commit with an old fencing token and leaves the session unchanged (test 5)', async () => {
    const keys = store.keys(SESSION);
    const oldFence = (await acquireLease(t.redis, keys, 60_000))!;
    await store.commit(SESSION, { expectedVersion: 0, fence: oldFence, projection: { append: [toEntry({ role: 'user', content: 'first' }, TOKENS)] } });
    await releaseLease(t.redis, keys, oldFence);
    const newFence = (await acquireLease(t.redis, keys, 60_000))!;
    expect(newFence).toBeGreaterThan(oldFence);
    expect(await renewLease(t.redis, keys, oldFence)).toBe(false);
    const before = await dump(t, keys);

    const stale = store.commit(SESSION, {
      expectedVersion: 1, fence: oldFence, projection: { replace: [toEntry({ role: 'user', content: 'overwrite' }, TOKENS)] },
      transcript: [{ type: 'compaction', layer: 'in-loop', outcome: 'compacted', tokensBefore: 1, tokensAfter: 0, durationMs: 0, atMs: 0 }],
      usage: { incr: { calls: 1 }, set: {} }, finishTurn: true, meta: { lastPromptTokens: 7 },
    });
    await expect(stale).rejects.toBeInstanceOf(StaleCommitError);
    expect(await dump(t, keys)).toEqual(before);
    expect(logLines.some((line) => line.msg === 'stale commit refused' && line.sessionId === SESSION)).toBe(true);

    await expect(store.commit(SESSION, { expectedVersion: 0, fence: newFence })).rejects.toThrow(/version mismatch/);
    expect(await store.commit(SESSION, { expectedVersion: 1, fence: newFence })).toBe(2);
  });

  it('adds counters to what is stored, keeps the first createdAtMs, and stores any number of items', async () => {
    let now = 1_000;
    store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix, now: () => now });
    const keys = store.keys(SESSION);
    const fence = (await acquireLease(t.redis, keys))!;
    const first = toEntry({ role: 'user', content: 'one' }, TOKENS);
    await store.commit(SESSION, { expectedVersion: 0, fence, projection: { append: [first] }, usage: { incr: { calls: 1, promptTokens: 7 }, set: { lastContextFill: '0.1000' } } });
    now = 2_000;
    const many = Array.from({ length: 2_500 }, (_, k) => toEntry({ role: 'user', content: `m${k}` }, TOKENS));
    const outbox = Array.from({ length: 1_001 }, (_, k) => ({ id: `reply-${k}`, sessionId: SESSION, channel: 'web' as const, chatId: 'c', text: 't', kind: 'reply' as const }));
    expect(await store.commit(SESSION, {
      expectedVersion: 1, fence, projection: { append: many }, outbox,
      usage: { incr: { calls: 2, promptTokens: 5, resets: 1 }, set: { lastContextFill: '0.2000', resets: '9' } }, meta: { turnInboundIds: ['x'] }, finishTurn: true,
    })).toBe(2);
    const snapshot = await store.load(SESSION);
    expect(snapshot.entries).toEqual([first, ...many]);
    expect(snapshot.meta).toMatchObject({
      version: 2, createdAtMs: 1_000, lastActivityMs: 2_000, turnInboundIds: [],
      projectionTokens: [first, ...many].reduce((sum, e) => sum + e.tokens, 0),
    });
    expect((await store.readOutbox(SESSION)).map((m) => m.id)).toEqual(outbox.map((m) => m.id));
    // A field both incremented and set ends as set (as an HINCRBY then an HSET would leave it).
    expect(await t.redis.hgetall(keys.usage)).toEqual({ calls: '3', promptTokens: '12', lastContextFill: '0.2000', resets: '9' });
  });

  it('puts the session in the index by last activity, to within a second (the commits of one turn update it once)', async () => {
    let now = 50_000;
    store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix, now: () => now });
    const fence = (await acquireLease(t.redis, store.keys(SESSION)))!;
    const score = () => t.redis.zscore(sessionIndexKey(t.keyPrefix), SESSION);
    await store.commit(SESSION, { expectedVersion: 0, fence });
    now += 900;
    await store.commit(SESSION, { expectedVersion: 1, fence });
    expect(await score()).toBe('50000');
    expect((await store.load(SESSION)).meta.lastActivityMs).toBe(50_900);
    now += 100;
    await store.commit(SESSION, { expectedVersion: 2, fence });
    expect(await score()).toBe('51000');
  });

  it('refuses a commit whose stored counter is not an integer, writing nothing', async () => {
    const keys = store.keys(SESSION);
    const fence = (await acquireLease(t.redis, keys))!;
    await store.commit(SESSION, { expectedVersion: 0, fence, projection: { append: [toEntry({ role: 'user', content: 'kept' }, TOKENS)] } });
    await t.redis.hset(keys.usage, 'calls', 'many');
    const before = await dump(t, keys);
    const change = { expectedVersion: 1, fence, projection: { append: [toEntry({ role: 'user', content: 'new' }, TOKENS)] }, usage: { incr: { calls: 1 }, set: {} }, finishTurn: true };
    await expect(store.commit(SESSION, change)).rejects.toThrow(/usage field calls holds a non-integer/);
    expect(await dump(t, keys)).toEqual(before);
    await t.redis.hset(keys.usage, 'calls', '1');
    await t.redis.hset(keys.meta, 'projectionTokens', '1.5');
    await expect(store.commit(SESSION, change)).rejects.toThrow(/projectionTokens holds a non-integer/);
    expect((await store.load(SESSION)).entries).toHaveLength(1);
  });
});

async function dump(t: TestRedis, keys: ReturnType<SessionStore['keys']>) {
  return {
    history: await t.redis.lrange(keys.history, 0, -1),
    meta: await t.redis.hgetall(keys.meta),
    usage: await t.redis.hgetall(keys.usage),
    transcript: await t.redis.xlen(keys.transcript),
    outbox: await t.redis.llen(keys.outbox),
  };
}
