import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createBudgetLedger, type BudgetLedgerOptions } from '../../src/budget/ledger.js';
import { createBudgetAdmin } from '../../src/budget/overrides.js';
import { NO_BUDGETS, type BudgetSettings } from '../../src/core/budget.js';
import { budgetKeys } from '../../src/redis/keys.js';
import { DAY_MS, dayIdOf, monthIdOf, nextMonthAt, tomorrowStart } from '../helpers/clock.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const alice = { user: 'telegram:42', chat: 'telegram:42' };
const bob = { user: 'telegram:43', chat: 'telegram:43' };
const settings = (patch: Partial<BudgetSettings>): BudgetSettings => ({ ...NO_BUDGETS, ...patch });
/** The day of `ms` as the counters store it, e.g. 20261202. */
const dayNumber = (ms: number) => Number(dayIdOf(ms).replaceAll('-', ''));

describe('budget ledger', () => {
  let t: TestRedis;
  const extra: Redis[] = [];
  beforeEach(() => {
    t = createTestRedis();
  });
  afterEach(async () => {
    for (const r of extra.splice(0)) r.disconnect();
    await t.cleanup();
  });
  const ledger = (s: BudgetSettings, more: Partial<BudgetLedgerOptions> = {}, redis: Redis = t.redis) => createBudgetLedger(redis, { keyPrefix: t.keyPrefix, settings: s, ...more });

  it('holds a user limit across many connections racing: never over it while usage stays within the worst case', async () => {
    const s = settings({ user: { day: { usd: 0.01 } } });
    const worst = 1500; // micro-USD
    const connections = Array.from({ length: 8 }, () => new Redis(t.url));
    extra.push(...connections);
    let admitted = 0;
    let refused = 0;
    await Promise.all(connections.map(async (redis) => {
      const l = ledger(s, {}, redis);
      for (let k = 0; k < 6; k++) {
        const r = await l.reserve(alice, { micro: worst, tokens: 100 });
        if ('breach' in r) {
          refused++;
          continue;
        }
        admitted++;
        await new Promise((resolve) => setImmediate(resolve));
        await l.settle(alice, r.id, { micro: worst, tokens: 100 });
      }
    }));
    const [day] = await ledger(s).state(alice);
    // 6 × 1,500 fit in 10,000; a 7th would not, whatever was in flight when it asked.
    expect(Math.round(day!.usedUsd * 1e6)).toBe(9000);
    expect(admitted).toBe(6);
    expect(refused).toBe(48 - admitted);
    // No room for another worst case even with nothing in flight: the marker answers the next message at once.
    expect(await ledger(s).reserve(alice, { micro: worst, tokens: 100 })).toMatchObject({ breach: { unit: 'usd', limit: 0.01, used: 0.009 } });
    expect(await ledger(s).check(alice)).toMatchObject({ level: 'user', period: 'day', unit: 'usd', limit: 0.01, used: 0.009 });
    expect(await ledger(s).check(bob)).toBeNull();
  });

  it('a lone caller never goes over: a call is let through only if its worst case fits in what is left', async () => {
    const s = settings({ user: { day: { usd: 0.01, tokens: 100_000 } } });
    const l = ledger(s);
    const outcomes: string[] = [];
    for (let k = 0; k < 8; k++) {
      const r = await l.reserve(alice, { micro: 3000, tokens: 1000 });
      if ('breach' in r) {
        outcomes.push(`refused ${r.breach.unit} ${r.breach.used}`);
        continue;
      }
      outcomes.push('admitted');
      await l.settle(alice, r.id, { micro: 2000 + k, tokens: 1000 });
    }
    // 4 calls used 8,006 micro-USD: the 1,994 left cannot hold a worst case of 3,000, so the 5th is refused.
    expect(outcomes).toEqual(['admitted', 'admitted', 'admitted', 'admitted', 'refused usd 0.008006', 'refused usd 0.008006', 'refused usd 0.008006', 'refused usd 0.008006']);
    const [day] = await l.state(alice);
    expect(day!.usedUsd).toBeLessThanOrEqual(0.01);
    // The marker a refusal left goes when the limit changes: a stored override drops it, a new configured limit ignores it.
    expect(await l.check(alice)).toMatchObject({ unit: 'usd', limit: 0.01, used: 0.008006 });
    expect(await ledger(settings({ user: { day: { usd: 0.02 } } })).check(alice)).toBeNull();
    await createBudgetAdmin(t.redis, { keyPrefix: t.keyPrefix, settings: s }).set('user', alice.user, { dailyUsd: 0.05 });
    expect(await l.check(alice)).toBeNull();
    expect('id' in (await l.reserve(alice, { micro: 3000, tokens: 1000 }))).toBe(true);
  });

  it('a tokens limit: the call whose worst case would go over is refused, the limit is never passed', async () => {
    const l = ledger(settings({ chat: { day: { tokens: 50_000 } } }));
    let admitted = 0;
    for (let k = 0; k < 3; k++) {
      const r = await l.reserve(alice, { tokens: 21_000 });
      if ('breach' in r) {
        expect(r.breach).toMatchObject({ level: 'chat', unit: 'tokens', limit: 50_000, used: 42_000 });
        continue;
      }
      admitted++;
      await l.settle(alice, r.id, { tokens: 21_000 });
    }
    expect(admitted).toBe(2);
    expect((await l.state(alice)).find((c) => c.level === 'chat' && c.period === 'day')).toMatchObject({ usedTokens: 42_000 });
    // Used exactly up: even a call that needs no tokens (a transcription) is refused.
    const last = await l.reserve(alice, { tokens: 8000 });
    if (!('id' in last)) throw new Error('refused');
    await l.settle(alice, last.id, { tokens: 8000 });
    expect(await l.reserve(alice, { micro: 10, tokens: 0 })).toMatchObject({ breach: { unit: 'tokens', used: 50_000 } });
  });

  it('starts again at 0 when the period ends (injected clock) and names the reset time', async () => {
    // Tomorrow (UTC), 20:48: the marker's expiry (Redis's own clock) is still ahead.
    const tomorrow = tomorrowStart();
    let now = tomorrow + (20 * 60 + 48) * 60_000;
    const l = ledger(settings({ chat: { day: { tokens: 1000 } } }), { now: () => now });
    const r = await l.reserve(alice, { tokens: 600 });
    if (!('id' in r)) throw new Error('refused');
    await l.settle(alice, r.id, { tokens: 1200 });
    const breach = await l.check(alice);
    expect(breach).toMatchObject({ level: 'chat', period: 'day', unit: 'tokens', limit: 1000, resetsAtMs: tomorrow + DAY_MS });
    now = tomorrow + DAY_MS + 1000;
    expect(await l.check(alice)).toBeNull();
    expect('id' in (await l.reserve(alice, { tokens: 600 }))).toBe(true);
  });

  it('frees the reservation of a worker killed between reserve and settle when its lease ends', async () => {
    let now = nextMonthAt(2, 10);
    const l = ledger(settings({ user: { day: { tokens: 1000 } } }), { now: () => now, reservationLeaseMs: 60_000 });
    expect('id' in (await l.reserve(alice, { tokens: 1000 }))).toBe(true); // never settled: the worker died
    expect(await l.reserve(alice, { tokens: 10 })).toMatchObject({ breach: { level: 'user', unit: 'tokens' } });
    now += 61_000;
    const again = await l.reserve(alice, { tokens: 10 });
    expect('id' in again).toBe(true);
    // Only the live reservations hold now: 10 + 990 reach 1000, so the next call waits.
    expect('id' in (await l.reserve(alice, { tokens: 990 }))).toBe(true);
    expect(await l.reserve(alice, { tokens: 1 })).toMatchObject({ breach: { level: 'user', unit: 'tokens' } });
  });

  it('counts an unpriced model in tokens only, never against a USD limit', async () => {
    const l = ledger(settings({ user: { day: { usd: 0.001, tokens: 5000 } } }));
    for (let k = 0; k < 3; k++) {
      const r = await l.reserve(alice, { tokens: 1000 });
      if (!('id' in r)) throw new Error('refused');
      await l.settle(alice, r.id, { tokens: 1000 });
    }
    const [day] = await l.state(alice);
    expect(day).toMatchObject({ usedUsd: 0, usedTokens: 3000, unpricedTokens: 3000, limitUsd: 0.001, limitTokens: 5000 });
  });

  it('takes per-user limits from the budgets file and from the stored override, which wins', async () => {
    const s = settings({ user: { day: { tokens: 100 } }, users: { 'telegram:42': 'unlimited', 'telegram:43': { day: { tokens: 10 } } } });
    const l = ledger(s);
    expect('id' in (await l.reserve(alice, { tokens: 10_000 }))).toBe(true);
    const r = await l.reserve(bob, { tokens: 10 });
    if (!('id' in r)) throw new Error('refused');
    await l.settle(bob, r.id, { tokens: 10 });
    expect(await l.check(bob)).toMatchObject({ limit: 10 });
    await createBudgetAdmin(t.redis, { keyPrefix: t.keyPrefix, settings: s }).set('user', 'telegram:43', { dailyTokens: 50 });
    expect(await t.redis.hget(budgetKeys(t.keyPrefix).limits, 'user:telegram:43')).toBe(JSON.stringify({ v: 1, dailyTokens: 50 }));
    expect(await l.check(bob)).toBeNull();
    expect((await l.state(bob))[0]).toMatchObject({ limitTokens: 50, usedTokens: 10 });
  });

  it('answers early from the marker only while the limit that was used up still holds', async () => {
    const tight = ledger(settings({ user: { day: { tokens: 10 } } }));
    const r = await tight.reserve(alice, { tokens: 1 });
    if (!('id' in r)) throw new Error('refused');
    await tight.settle(alice, r.id, { tokens: 10 });
    expect(await tight.check(alice)).toMatchObject({ level: 'user', unit: 'tokens', limit: 10 });
    // The operator raised the limit in the environment and restarted: the old marker no longer answers.
    const raised = ledger(settings({ user: { day: { tokens: 100 } } }));
    expect(await raised.check(alice)).toBeNull();
    expect('id' in (await raised.reserve(alice, { tokens: 1 }))).toBe(true);
    // A stored override set (or reset) through `chatgate budgets` drops the marker at once.
    await createBudgetAdmin(t.redis, { keyPrefix: t.keyPrefix, settings: settings({ user: { day: { tokens: 10 } } }) }).set('user', alice.user, { dailyTokens: 50 });
    expect(await tight.check(alice)).toBeNull();
  });

  it('names a marker it cannot read beside the ones it reads; the early answer prefers one that holds; the reserve decides from the counters', async () => {
    const tight = ledger(settings({ user: { day: { tokens: 10 } }, chat: { day: { tokens: 1000 } } }));
    const r = await tight.reserve(bob, { tokens: 1 });
    if (!('id' in r)) throw new Error('refused');
    await tight.settle(bob, r.id, { tokens: 10 });
    const keys = budgetKeys(t.keyPrefix);
    await t.redis.set(keys.exhausted('user', alice.user), JSON.stringify({ v: 9 }), 'PX', 600_000);
    await t.redis.set(keys.exhausted('chat', bob.chat), 'not json', 'PX', 600_000);
    expect(await tight.blockedOf([{ level: 'user', subject: alice.user }, { level: 'user', subject: bob.user }, { level: 'chat', subject: bob.chat }])).toEqual([
      { format: 9, unreadable: 'marker unreadable (format 9): it blocks nothing and goes when its period ends; `chatgate budgets reset user telegram:42` drops it now (and any limits stored for user telegram:42)' },
      expect.objectContaining({ level: 'user', unit: 'tokens', limit: 10 }),
      { unreadable: 'marker unreadable (format none): it blocks nothing and goes when its period ends; `chatgate budgets reset chat telegram:43` drops it now (and any limits stored for chat telegram:43)' },
    ]);
    expect(await tight.check(alice)).toMatchObject({ format: 9 });
    expect(await tight.check(bob)).toMatchObject({ level: 'user', limit: 10 });
    expect('id' in (await tight.reserve(alice, { tokens: 1 }))).toBe(true);
    expect(await tight.reserve(bob, { tokens: 1 })).toMatchObject({ breach: { level: 'user', limit: 10 } });
  });

  it('reports the notice share once and the exhausted limit once', async () => {
    const l = ledger(settings({ user: { day: { tokens: 100 } }, noticePercent: 80 }));
    const call = async (tokens: number) => {
      const r = await l.reserve(alice, { tokens: 1 });
      if (!('id' in r)) throw new Error('refused');
      return (await l.settle(alice, r.id, { tokens })).map((e) => e.kind);
    };
    expect(await call(50)).toEqual([]);
    expect(await call(30)).toEqual(['near']);
    expect(await call(5)).toEqual([]);
    expect(await call(20)).toEqual(['exhausted']);
  });
});

describe('budget ledger: stored counters', () => {
  let t: TestRedis;
  beforeEach(() => {
    t = createTestRedis();
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('keeps a subject\'s counters as packed integers (format 2) and refuses another version until they are reset', async () => {
    let now = nextMonthAt(2, 10);
    const s = settings({ user: { day: { tokens: 1000 } } });
    const l = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: s, now: () => now });
    const key = budgetKeys(t.keyPrefix).counters(monthIdOf(now));
    /** The stored counters as numbers (little-endian doubles). */
    const stored = async (field: string) => {
      const raw = await t.redis.hgetBuffer(key, field);
      return raw && Array.from({ length: raw.length / 8 }, (_, k) => raw.readDoubleLE(8 * k));
    };
    const r = await l.reserve(alice, { tokens: 100 });
    if (!('id' in r)) throw new Error('refused');
    // Reserved on the subject with a limit only: the version, the day, its and the month's used amounts, then the minute its lease ends and what it holds.
    expect(await stored('user:telegram:42')).toEqual([2, dayNumber(now), 0, 0, 0, 0, 0, 0, 0, 0, Math.ceil((now + 15 * 60_000) / 60_000), 0, 100]);
    expect(await stored('chat:telegram:42')).toBeNull();
    await l.settle(alice, r.id, { tokens: 40 });
    // Settled: the reservation released, the use counted on every counter (unpriced: its tokens in uu too).
    expect(await stored('user:telegram:42')).toEqual([2, dayNumber(now), 0, 40, 40, 0, 0, 40, 40, 0]);
    expect(await stored('deployment:all')).toEqual([2, dayNumber(now), 0, 40, 40, 0, 0, 40, 40, 0]);
    // The next day its day's part starts again; the month's goes on.
    now = nextMonthAt(3, 10);
    const next = await l.reserve(alice, { tokens: 1000 });
    if (!('id' in next)) throw new Error('refused');
    await l.settle(alice, next.id, { tokens: 5 });
    expect(await stored('user:telegram:42')).toEqual([2, dayNumber(now), 0, 5, 5, 0, 0, 45, 45, 0]);
    expect((await l.state(alice)).filter((c) => c.level === 'user').map((c) => c.usedTokens)).toEqual([5, 45]);

    await t.redis.hset(key, 'user:telegram:42', JSON.stringify({ v: 1, um: 0, ut: 40, uu: 0, r: {}, s: {} }));
    await expect(l.reserve(alice, { tokens: 1 })).rejects.toThrow(/counters user:telegram:42 are not in format version 2 .*: zero them with chatgate budgets reset user telegram:42 --usage/);
    await l.resetUsage('user', 'telegram:42');
    expect(await stored('user:telegram:42')).toEqual([2, dayNumber(now), 0, 0, 0, 0, 0, 0, 0, 0]);
    expect('id' in (await l.reserve(alice, { tokens: 1 }))).toBe(true);
  });
});

describe('budget ledger: reading many subjects', () => {
  let t: TestRedis;
  beforeEach(() => {
    t = createTestRedis();
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await t.cleanup();
  });

  it('reads 450 subjects in three script calls, in order, and `chatgate budgets list` uses it', async () => {
    const s = settings({ user: { day: { tokens: 1_000_000 } }, chat: { month: { usd: 5 } } });
    const l = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: s });
    const users = Array.from({ length: 300 }, (_, k) => `web:u${String(k).padStart(3, '0')}`);
    for (const [k, user] of users.entries()) {
      if (k % 3 !== 0) continue;
      const r = await l.reserve({ user, chat: `web:c${k}` }, { tokens: k + 1 });
      if (!('id' in r)) throw new Error('refused');
      await l.settle({ user }, r.id, { tokens: k + 1 });
    }
    const calls = vi.spyOn(t.redis as unknown as { budget: (...args: unknown[]) => Promise<unknown> }, 'budget');
    const subjects = [...users.map((subject) => ({ level: 'user' as const, subject })), ...users.slice(0, 150).map((_, k) => ({ level: 'chat' as const, subject: `web:c${k}` }))];
    const states = await l.statesOf(subjects);
    expect(calls).toHaveBeenCalledTimes(3);
    expect(states).toHaveLength(450);
    expect(states[3]).toMatchObject([{ level: 'user', subject: 'web:u003', period: 'day', usedTokens: 4, limitTokens: 1_000_000 }, { period: 'month', usedTokens: 4 }]);
    expect(states[301]).toMatchObject([{ level: 'chat', subject: 'web:c1', usedTokens: 0 }, { period: 'month', limitUsd: 5 }]);
    expect(states[303]![0]).toMatchObject({ level: 'chat', subject: 'web:c3', usedTokens: 4 });

    calls.mockClear();
    const rows = await createBudgetAdmin(t.redis, { keyPrefix: t.keyPrefix, settings: s }).list();
    // 100 users and 100 chats with counters, the deployment: two script calls.
    expect(calls).toHaveBeenCalledTimes(2);
    expect(rows.filter((r) => r.level === 'user')).toHaveLength(100);
    expect(rows.find((r) => r.subject === 'web:u297')).toMatchObject({ period: 'day', unit: 'tokens', used: 298, limit: 1_000_000 });
    expect(rows.filter((r) => r.level === 'chat' && r.period === 'month')).toHaveLength(100);
  });
});

describe('budget ledger: the month\'s copy of the limits', () => {
  let t: TestRedis;
  beforeEach(() => {
    t = createTestRedis();
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('copies 5,000 stored overrides on the month\'s first call', async () => {
    const keys = budgetKeys(t.keyPrefix);
    const overrides: string[] = [];
    for (let k = 0; k < 5000; k++) overrides.push(`user:web:u${k}`, JSON.stringify({ v: 1, dailyTokens: 100 + k }));
    await t.redis.hset(keys.limits, ...overrides);
    const now = nextMonthAt(2, 10);
    const l = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: settings({ user: { day: { tokens: 10 } } }), now: () => now });
    expect(await l.reserve({ user: 'web:u4999' }, { tokens: 5000 })).toHaveProperty('id');
    expect(await l.reserve({ user: 'web:u0' }, { tokens: 101 })).toMatchObject({ breach: { unit: 'tokens', limit: 100 } });
    expect(await t.redis.hlen(keys.counters(monthIdOf(now)))).toBe(5000 + 1 + 2);
    expect(await t.redis.hget(keys.counters(monthIdOf(now)), 'limit2:user:web:u4999')).toBe('2 -1 5099 -1 -1');
  });
});

describe('budget ledger: markers', () => {
  let t: TestRedis;
  let sub: Redis;
  beforeEach(() => {
    t = createTestRedis();
    sub = new Redis(t.url);
  });
  afterEach(async () => {
    sub.disconnect();
    await t.cleanup();
  });

  /** Every announcement on the markers channel while `body` runs (a last message of its own closes the list). */
  const announced = async (body: () => Promise<void>): Promise<string[]> => {
    const channel = budgetKeys(t.keyPrefix).markerChannel;
    const heard: string[] = [];
    let end!: () => void;
    const ended = new Promise<void>((resolve) => { end = resolve; });
    sub.on('message', (_channel: string, message: string) => (message === 'end' ? end() : heard.push(message)));
    await sub.subscribe(channel);
    await body();
    await t.redis.publish(channel, 'end');
    await ended;
    return heard;
  };

  it('a settle over a limit sets and announces the marker once, not again on each later settle', async () => {
    const l = ledger2(t, settings({ user: { day: { tokens: 100 } } }));
    const heard = await announced(async () => {
      const calls = [await l.reserve(alice, { tokens: 30 }), await l.reserve(alice, { tokens: 30 }), await l.reserve(alice, { tokens: 30 })];
      for (const [k, r] of calls.entries()) {
        if (!('id' in r)) throw new Error('refused');
        await l.settle(alice, r.id, { tokens: 60 + k });
      }
    });
    expect(heard).toHaveLength(1);
    expect(JSON.parse(heard[0]!)).toMatchObject({ key: budgetKeys(t.keyPrefix).exhausted('user', alice.user) });
    expect(JSON.parse(JSON.parse(heard[0]!).marker as string)).toMatchObject({ v: 1, level: 'user', period: 'day', unit: 'tokens', limit: 100, used: 121, src: 'config' });
    expect(await l.check(alice)).toMatchObject({ level: 'user', unit: 'tokens', limit: 100 });
  });
});

function ledger2(t: TestRedis, s: BudgetSettings) {
  return createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: s });
}

describe('budget ledger: an operator changes a limit', () => {
  let t: TestRedis;
  beforeEach(() => {
    t = createTestRedis();
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('after a raise the notice share and the used-up limit are reported again, on the day and the month', async () => {
    const s = settings({ user: { day: { tokens: 100 }, month: { tokens: 200 } }, noticePercent: 80 });
    const l = ledger2(t, s);
    const call = async (tokens: number) => {
      const r = await l.reserve(alice, { tokens: 1 });
      if (!('id' in r)) throw new Error('refused');
      return (await l.settle(alice, r.id, { tokens })).map((e) => `${e.period} ${e.kind}`);
    };
    expect(await call(85)).toEqual(['day near']);
    expect(await call(20)).toEqual(['day exhausted']);
    await createBudgetAdmin(t.redis, { keyPrefix: t.keyPrefix, settings: s }).set('user', alice.user, { dailyTokens: 1000, monthlyTokens: 2000 });
    expect(await call(700)).toEqual(['day near']);
    expect(await call(200)).toEqual(['day exhausted']);
    // Back to the configured limits: both are over them, and both are said again.
    await createBudgetAdmin(t.redis, { keyPrefix: t.keyPrefix, settings: s }).reset('user', alice.user);
    expect((await l.state(alice)).map((c) => c.usedTokens)).toEqual([1005, 1005, 1005, 1005, 1005, 1005]);
    expect(await l.reserve(alice, { tokens: 1 })).toMatchObject({ breach: { period: 'day', unit: 'tokens', limit: 100 }, event: { kind: 'exhausted' } });
  });
});

describe('budget ledger: a month an older chatgate counted in', () => {
  let t: TestRedis;
  beforeEach(() => {
    t = createTestRedis();
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('refuses calls until `chatgate budgets reset … --usage` drops the format 1 counters', async () => {
    const now = nextMonthAt(2, 10);
    const key = budgetKeys(t.keyPrefix).counters(monthIdOf(now));
    await t.redis.hset(key, '$limits', '1', 'limit:user:telegram:42', JSON.stringify({ v: 1, dailyTokens: 5 }), `user:telegram:42:${dayIdOf(now)}`, JSON.stringify({ v: 1, um: 0, ut: 40, uu: 0, r: {}, s: {} }));
    const l = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: settings({ user: { day: { tokens: 1000 } } }), now: () => now });
    await expect(l.reserve(alice, { tokens: 1 })).rejects.toThrow(/counters of this month are in format version 1 .*: zero them with chatgate budgets reset deployment --usage/);
    await l.resetUsage('deployment', 'all');
    expect((await t.redis.hkeys(key)).sort()).toEqual(['$limits2']);
    expect('id' in (await l.reserve(alice, { tokens: 1 }))).toBe(true);
  });
});
