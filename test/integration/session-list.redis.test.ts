import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pageSessions, type SessionRow } from '../../src/core/session-view.js';
import { acquireLease, releaseLease } from '../../src/redis/lease.js';
import { createRedisSessionView, type RedisSessionViewOptions } from '../../src/redis/session-reader.js';
import { createSessionStore, toEntry } from '../../src/redis/session-store.js';
import { callUsageDelta } from '../../src/redis/usage.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { TokenCounter } from '../../src/core/tokens.js';

const TOKENS = new TokenCounter();

const WINDOW = 16_000;
const T0 = Date.UTC(2026, 0, 15, 9, 0, 0);

/** Session `i`: every third one on telegram; activity grows with `i`; fills are all different (7919 is prime to 300). */
const sessionId = (i: number) => `${i % 3 === 0 ? 'telegram' : 'web'}:s${String(i).padStart(3, '0')}`;
const promptTokensOf = (i: number) => 1000 + ((i * 7919) % 300) * 10;

/**
 * The client as the reader sees it, counting round trips: every command called on it, and every
 * pipeline executed (a pipeline's commands travel together).
 */
function countRoundTrips(redis: Redis): { client: Redis; count: () => number } {
  let trips = 0;
  const client = new Proxy(redis, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (prop !== 'pipeline') {
        return (...args: unknown[]) => {
          trips++;
          return method.apply(target, args);
        };
      }
      return (...args: unknown[]) => {
        const pipe = method.apply(target, args) as { exec: (...a: unknown[]) => unknown };
        const exec = pipe.exec.bind(pipe);
        pipe.exec = (...a: unknown[]) => {
          trips++;
          return exec(...a);
        };
        return pipe;
      };
    },
  });
  return { client, count: () => trips };
}

describe('Redis session reader: listing many sessions', () => {
  let t: TestRedis;

  beforeEach(() => { t = createTestRedis(); });
  afterEach(async () => { await t.cleanup(); });

  /** Session `i`: one answered turn at `T0 + i s`, billed `promptTokensOf(i)`. */
  async function seed(from: number, to: number): Promise<void> {
    await Promise.all(Array.from({ length: to - from }, async (_, k) => {
      const i = from + k;
      const id = sessionId(i);
      const store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix, now: () => T0 + i * 1000 });
      const keys = store.keys(id);
      const fence = (await acquireLease(t.redis, keys))!;
      const entries = [toEntry({ role: 'user', content: `question ${i}` }, TOKENS), toEntry({ role: 'assistant', content: `answer ${i}` }, TOKENS)];
      await store.commit(id, {
        expectedVersion: 0, fence, projection: { append: entries },
        transcript: entries.map((e) => ({ type: 'message' as const, message: e.message, tokens: e.tokens, atMs: T0 + i * 1000 })),
        usage: callUsageDelta('gpt-4o-mini', { promptTokens: promptTokensOf(i), completionTokens: 5, cachedTokens: 0 }, WINDOW),
        meta: { route: { channel: id.split(':')[0] as 'web', chatId: id.split(':')[1] }, lastPromptTokens: promptTokensOf(i), appendedTokensSince: 0 },
      });
      await releaseLease(t.redis, keys, fence);
    }));
  }

  const readerOn = (redis: Redis, options: Partial<RedisSessionViewOptions> = {}) =>
    createRedisSessionView({ redis }, { keyPrefix: t.keyPrefix, contextWindow: WINDOW, ...options });

  /** Every row, by paging the default list (the reference the other sorts are checked against). */
  async function allRows(): Promise<SessionRow[]> {
    return (await readerOn(t.redis).listSessions({ limit: 10_000 })).items;
  }

  it('pages by last activity in Redis: the right slice, in a number of round trips that does not grow with the sessions', async () => {
    await seed(0, 30);
    const small = countRoundTrips(t.redis);
    await readerOn(small.client).listSessions({ offset: 10, limit: 20 });
    await seed(30, 300);
    const large = countRoundTrips(t.redis);
    const page = await readerOn(large.client).listSessions({ offset: 100, limit: 20 });
    expect(large.count()).toBe(small.count());
    expect(large.count()).toBe(2);

    expect(page).toMatchObject({ total: 300, offset: 100, limit: 20 });
    expect(page.capped).toBeUndefined();
    expect(page.items.map((row) => row.id)).toEqual(Array.from({ length: 20 }, (_, k) => sessionId(199 - k)));
    expect(page.items[0]).toMatchObject({ channel: 'web', messages: 2, contextTokens: promptTokensOf(199), fill: promptTokensOf(199) / WINDOW, promptTokens: promptTokensOf(199), lastActivityAt: T0 + 199_000 });
    const oldest = await readerOn(t.redis).listSessions({ order: 'asc', offset: 0, limit: 3 });
    expect(oldest.items.map((row) => row.id)).toEqual([sessionId(0), sessionId(1), sessionId(2)]);
    expect((await readerOn(t.redis).listSessions({ offset: 295, limit: 50 })).items.map((row) => row.id)).toEqual([4, 3, 2, 1, 0].map(sessionId));
  });

  it('sorts by fill and filters by channel over the scanned sessions, as the reference paging does', async () => {
    await seed(0, 300);
    const rows = await allRows();
    expect(rows).toHaveLength(300);
    const counted = countRoundTrips(t.redis);
    const reader = readerOn(counted.client);
    for (const options of [
      { sort: 'fill' as const, offset: 40, limit: 25 },
      { sort: 'fill' as const, order: 'asc' as const, offset: 0, limit: 10 },
      { channel: 'telegram' as const, offset: 5, limit: 10 },
      { sort: 'fill' as const, channel: 'web' as const, offset: 190, limit: 50 },
    ]) {
      expect(await reader.listSessions(options)).toEqual(pageSessions(rows, options));
    }
    // Per list: the index, one meta batch (300 ≤ 500), the page's rows.
    expect(counted.count()).toBe(4 * 3);
  });

  it('caps the scan at maxScannedSessions most recent sessions and says so', async () => {
    await seed(0, 300);
    const reader = readerOn(t.redis, { maxScannedSessions: 100 });
    const page = await reader.listSessions({ sort: 'fill', limit: 500 });
    expect(page).toMatchObject({ total: 100, capped: true });
    expect(page.items.map((row) => row.id).sort()).toEqual(Array.from({ length: 100 }, (_, k) => sessionId(200 + k)).sort());
    expect((await reader.listSessions({ limit: 5 })).capped).toBeUndefined();
  });
});
