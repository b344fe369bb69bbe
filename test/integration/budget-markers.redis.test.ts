import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createBudgetLedger } from '../../src/budget/ledger.js';
import { watchBudgetMarkers, type MarkerWatch } from '../../src/budget/markers.js';
import { createBudgetAdmin } from '../../src/budget/overrides.js';
import { NO_BUDGETS, type BudgetSettings } from '../../src/core/budget.js';
import { budgetKeys } from '../../src/redis/keys.js';
import { createLogSink } from '../helpers/log-sink.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const alice = { user: 'telegram:42', chat: 'telegram:42' };
const bob = { user: 'telegram:43', chat: 'telegram:43' };
const settings: BudgetSettings = { ...NO_BUDGETS, user: { day: { usd: 0.01 } } };
/** A call's worst case: a second one does not fit in the user's $0.01 after the first settled at its worst. */
const worst = { micro: 6000, tokens: 100 };

describe('the gateway\'s copy of the budget markers', () => {
  let t: TestRedis;
  let gatewayRedis: Redis;
  let subscriber: Redis;
  const watches: MarkerWatch[] = [];
  beforeEach(() => {
    t = createTestRedis();
    gatewayRedis = new Redis(t.url);
    subscriber = new Redis(t.url);
  });
  afterEach(async () => {
    for (const w of watches.splice(0)) await w.close();
    gatewayRedis.disconnect();
    subscriber.disconnect();
    await t.cleanup();
  });
  const watch = async (maxEntries?: number, logger = createLogSink().logger) => {
    const w = await watchBudgetMarkers({ redis: gatewayRedis, subscriber, logger }, { keyPrefix: t.keyPrefix, ...(maxEntries ? { maxEntries } : {}) });
    watches.push(w);
    return w;
  };
  /** What a worker does: a reservation settled at its worst, on a connection of its own. */
  const worker = () => createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings });
  const spend = async (scope: typeof alice) => {
    const r = await worker().reserve(scope, worst);
    if (!('id' in r)) throw new Error('reservation refused');
    await worker().settle(scope, r.id, worst);
  };
  /** Uses up alice's day: the second reservation finds no room and leaves the marker. */
  const exhaust = async () => {
    await spend(alice);
    expect(await worker().reserve(alice, worst)).toMatchObject({ breach: { level: 'user', unit: 'usd' } });
  };

  it('reads a scope\'s markers once, then answers from its copy, and hears a marker set by a worker', async () => {
    const markers = await watch();
    const gateway = createBudgetLedger(gatewayRedis, { keyPrefix: t.keyPrefix, settings, markers });
    const mget = vi.spyOn(gatewayRedis, 'mget');
    expect(await gateway.check(alice)).toBeNull();
    expect(await gateway.check(bob)).toBeNull();
    // Both scopes share the deployment's marker key: 1 read for alice, 1 for bob's two own keys.
    expect(mget).toHaveBeenCalledTimes(2);
    for (let k = 0; k < 5; k++) expect(await gateway.check(alice)).toBeNull();
    expect(mget).toHaveBeenCalledTimes(2);

    await exhaust();
    await vi.waitFor(async () => expect(await gateway.check(alice)).toMatchObject({ level: 'user', period: 'day', unit: 'usd', limit: 0.01, used: 0.006 }), { timeout: 5000 });
    expect(await gateway.check(bob)).toBeNull();
    expect(mget).toHaveBeenCalledTimes(2);
  });

  it('hears a marker dropped by a new limit and by a reset of the usage', async () => {
    const markers = await watch();
    const gateway = createBudgetLedger(gatewayRedis, { keyPrefix: t.keyPrefix, settings, markers });
    await exhaust();
    expect(await gateway.check(alice)).not.toBeNull();
    const admin = createBudgetAdmin(t.redis, { keyPrefix: t.keyPrefix, settings });

    await admin.set('user', alice.user, { dailyUsd: 1 });
    await vi.waitFor(async () => expect(await gateway.check(alice)).toBeNull(), { timeout: 5000 });

    await admin.set('user', alice.user, { dailyUsd: 0.01 });
    expect(await worker().reserve(alice, worst)).toMatchObject({ breach: { level: 'user' } });
    await vi.waitFor(async () => expect(await gateway.check(alice)).not.toBeNull(), { timeout: 5000 });

    await admin.reset('user', alice.user, { usage: true });
    await vi.waitFor(async () => expect(await gateway.check(alice)).toBeNull(), { timeout: 5000 });
    expect(await Promise.all([gatewayRedis.exists(budgetKeys(t.keyPrefix).exhausted('user', alice.user))])).toEqual([0]);
  });

  it('reads Redis while its subscription is down, and misses no marker set meanwhile', async () => {
    const id = Number(await subscriber.client('ID'));
    const markers = await watch();
    const gateway = createBudgetLedger(gatewayRedis, { keyPrefix: t.keyPrefix, settings, markers });
    expect(await gateway.check(alice)).toBeNull();
    const mget = vi.spyOn(gatewayRedis, 'mget');

    // The subscriber's connection drops; the marker is set before it is back.
    const lost = new Promise((resolve) => subscriber.once('close', resolve));
    await t.redis.client('KILL', 'ID', String(id));
    await lost;
    expect(markers.live).toBe(false);
    await exhaust();
    expect(await gateway.check(alice)).toMatchObject({ level: 'user', unit: 'usd' });
    expect(mget).toHaveBeenCalled();

    // Back: the copy starts empty and is kept again.
    await vi.waitFor(() => expect(markers.live).toBe(true), { timeout: 5000 });
    mget.mockClear();
    expect(await gateway.check(alice)).toMatchObject({ level: 'user' });
    expect(await gateway.check(alice)).toMatchObject({ level: 'user' });
    expect(mget).toHaveBeenCalledTimes(1);
  });

  it('drops its copy on a malformed announcement and says so', async () => {
    const sink = createLogSink();
    const markers = await watch(undefined, sink.logger);
    const gateway = createBudgetLedger(gatewayRedis, { keyPrefix: t.keyPrefix, settings, markers });
    expect(await gateway.check(alice)).toBeNull();
    await t.redis.publish(budgetKeys(t.keyPrefix).markerChannel, '{"key": 7}');
    await sink.waitFor((line) => line.msg.startsWith('malformed budget marker announcement'));
    // A marker set with no announcement (as by hand) is still found: the copy was dropped.
    const marker = JSON.stringify({ v: 1, level: 'user', period: 'day', unit: 'usd', limit: 10000, used: 10000, resetsAtMs: Date.now() + 3_600_000, src: 'config' });
    await t.redis.set(budgetKeys(t.keyPrefix).exhausted('user', alice.user), marker, 'PX', 3_600_000);
    expect(await gateway.check(alice)).toMatchObject({ level: 'user', used: 0.01 });
    await vi.waitFor(() => expect(markers.live).toBe(true), { timeout: 5000 });
  });

  it('keeps at most its bound of keys, reading again what it let go', async () => {
    const markers = await watch(3);
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name) => `${t.keyPrefix}${name}`) as [string, string, string, string];
    const mget = vi.spyOn(gatewayRedis, 'mget');
    await markers.read([a, b, c]);
    await markers.read([d]);
    await markers.read([b, c, d]);
    expect(mget).toHaveBeenCalledTimes(2);
    await markers.read([a]);
    expect(mget).toHaveBeenCalledTimes(3);
    expect(mget).toHaveBeenLastCalledWith(a);
  });
});
