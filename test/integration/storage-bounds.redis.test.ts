/**
 * The settings that bound what grows in Redis (docs/scaling.md), on real Redis: the seen markers'
 * life (`CHATGATE_SEEN_TTL_SECONDS`, through the whole gateway) and the transcript cap
 * (`CHATGATE_TRANSCRIPT_MAXLEN`, through the store every role uses).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createWebChannel } from '../../channels/web/index.js';
import { gatewayOptions, sessionOpsOptions, workerOptions } from '../../src/cli/compose.js';
import { loadConfig } from '../../src/config.js';
import { acquireLease } from '../../src/redis/lease.js';
import { createSessionStore, toEntry, type CommitChange } from '../../src/redis/session-store.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { TokenCounter } from '../../src/core/tokens.js';

const TOKENS = new TokenCounter();

describe('storage bounds', () => {
  let stack: Stack | undefined;
  let t: TestRedis | undefined;
  afterEach(async () => {
    await stack?.close();
    await t?.cleanup();
    [stack, t] = [undefined, undefined];
  });

  /** Posts one web chat message, waits for its answer, and returns the TTLs of the seen markers in Redis, seconds. */
  async function seenTtls(env: Record<string, string>): Promise<number[]> {
    const web = createWebChannel({});
    stack = await startStack({ channels: { list: [web], mount: (app) => app.route('/', web.app) }, handler: () => ({ content: 'ok' }), env });
    const api = `${stack.gateway.httpUrl}/api/chat/bounds`;
    const post = await fetch(`${api}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hello', clientMessageId: 'm1' }) });
    expect(post.status).toBe(202);
    await fetch(`${api}/messages?after=0&timeoutMs=30000`);
    const markers = await stack.t.redis.keys(`${stack.t.keyPrefix}*:seen:*`);
    expect(markers).toHaveLength(1);
    return Promise.all(markers.map((key) => stack!.t.redis.ttl(key)));
  }

  /** One commit's change: `size` messages appended to the projection and the transcript. */
  function exchange(version: number, size = 10): Pick<CommitChange, 'projection' | 'transcript'> {
    const entries = Array.from({ length: size }, (_, k) => toEntry({ role: 'user', content: `message ${version * size + k}` }, TOKENS));
    return { projection: { append: entries }, transcript: entries.map((entry) => ({ type: 'message', message: entry.message, tokens: entry.tokens, atMs: Date.now() })) };
  }

  it('a seen marker lives CHATGATE_SEEN_TTL_SECONDS', async () => {
    const [ttl] = await seenTtls({ CHATGATE_SEEN_TTL_SECONDS: '600' });
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600);
  });

  it('a seen marker lives a day by default', async () => {
    const [ttl] = await seenTtls({});
    expect(ttl).toBeGreaterThan(600);
    expect(ttl).toBeLessThanOrEqual(86_400);
  });

  it('a transcript is bounded by default: the oldest entries past 10,000 are trimmed', async () => {
    expect(loadConfig({ CHATGATE_DEMO: 'true' }).transcriptMaxLen).toBe(10_000);
    t = createTestRedis();
    const store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix });
    const fence = (await acquireLease(t.redis, store.keys('web:long')))!;
    for (let version = 0; version < 105; version++) await store.commit('web:long', { expectedVersion: version, fence, ...exchange(version, 100) });
    const key = store.keys('web:long').transcript;
    const kept = await t.redis.xlen(key);
    expect(kept).toBeGreaterThanOrEqual(10_000);
    expect(kept).toBeLessThanOrEqual(10_100);
    // The oldest went, the newest stayed.
    const [[, oldest]] = (await t.redis.xrange(key, '-', '+', 'COUNT', 1)) as Array<[string, string[]]>;
    const [[, newest]] = (await t.redis.xrevrange(key, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
    expect(oldest.join(' ')).not.toContain('"message 0"');
    expect(newest.join(' ')).toContain('message 10499');
  });

  it('CHATGATE_TRANSCRIPT_MAXLEN caps every transcript near its value; every role is given it', async () => {
    const config = loadConfig({ CHATGATE_TRANSCRIPT_MAXLEN: '50', CHATGATE_DEMO: 'true' });
    expect([gatewayOptions(config).transcriptRetention, workerOptions(config).transcriptRetention, sessionOpsOptions(config, 1000).transcriptRetention]).toEqual([50, 50, 50]);
    t = createTestRedis();
    const store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix, transcriptRetention: config.transcriptMaxLen });
    const fence = (await acquireLease(t.redis, store.keys('web:capped')))!;
    for (let version = 0; version < 60; version++) await store.commit('web:capped', { expectedVersion: version, fence, ...exchange(version) });
    const kept = await t.redis.xlen(store.keys('web:capped').transcript);
    // MAXLEN ~ trims whole stream nodes (Redis's stream-node-max-entries, 100 by default): at most that many more stay.
    expect(kept).toBeGreaterThanOrEqual(50);
    expect(kept).toBeLessThanOrEqual(150);
    const unbounded = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix, transcriptRetention: 0 });
    const fenceB = (await acquireLease(t.redis, unbounded.keys('web:uncapped')))!;
    for (let version = 0; version < 60; version++) await unbounded.commit('web:uncapped', { expectedVersion: version, fence: fenceB, ...exchange(version) });
    expect(await t.redis.xlen(unbounded.keys('web:uncapped').transcript)).toBe(600);
  });
});
