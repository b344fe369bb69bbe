import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoredFormatError, StaleCommitError, UsageQueryError } from '../../src/errors.js';
import { usageRollupKey } from '../../src/redis/keys.js';
import { acquireLease } from '../../src/redis/lease.js';
import { createSessionStore, type SessionStore } from '../../src/redis/session-store.js';
import { callUsageDelta, compactionUsageDelta, mergeUsage, readUsage, summaryUsageDelta, unreportedCallDelta } from '../../src/redis/usage.js';
import { compactionSentence } from '../../src/usage/figures.js';
import { formatMoney } from '../../src/core/money.js';
import { createUsageReader } from '../../src/usage/read-model.js';
import { recordCommittedUsage } from '../../src/usage/usage-metrics.js';
import { createPrometheusMetrics, type PrometheusMetrics } from '../../src/monitor/metrics.js';
import { DAY_MS as DAY, HOUR_MS as HOUR, dayIdOf, hourLabelOf, nextMonthAt } from '../helpers/clock.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

// 10:30 UTC on the 2nd of next month: the rollups' expiry (Redis's own clock) is ahead.
const NOW = nextMonthAt(2, 10, 30);
const PRICES = { 'priced-model': { input: 1, output: 2 } };

describe('usage rollups', () => {
  let t: TestRedis;
  let clock: number;
  let store: SessionStore;
  let metrics: PrometheusMetrics;

  beforeEach(() => {
    t = createTestRedis();
    clock = NOW;
    metrics = createPrometheusMetrics();
    store = createSessionStore({ redis: t.redis, onCommitted: recordCommittedUsage(metrics) }, { keyPrefix: t.keyPrefix, now: () => clock });
  });

  afterEach(() => t.cleanup());

  const reader = () => createUsageReader(t.redis, { keyPrefix: t.keyPrefix, now: () => clock });

  async function commit(sessionId: string, user: string | undefined, usage: Parameters<SessionStore['commit']>[1]['usage']): Promise<void> {
    const keys = store.keys(sessionId);
    const fence = (await acquireLease(t.redis, keys))!;
    const { meta } = await store.load(sessionId);
    await store.commit(sessionId, { expectedVersion: meta.version, fence, usage, ...(user ? { user } : {}) });
    await t.redis.del(keys.lease);
  }

  it('adds each commit to the hour and day of its session, by model and user, beside the ledger', async () => {
    await commit('telegram:1', 'telegram:42', callUsageDelta('priced-model', { promptTokens: 1000, completionTokens: 100, cachedTokens: 200 }, 10_000, PRICES));
    await commit('telegram:1', 'telegram:43', unreportedCallDelta('priced-model', PRICES));
    await commit('web:2', 'web:u', callUsageDelta('mystery-model', { promptTokens: 500, completionTokens: 50, cachedTokens: 0 }, 10_000, PRICES));
    const report = await reader().report({ since: '1d', by: 'user' });
    expect(report.totals).toMatchObject({ inputTokens: 1300, cachedTokens: 200, outputTokens: 150, calls: 3, unpricedCalls: 1 });
    // 800 × $1 + 200 × $1 (no cached price) + 100 × $2, per 1M tokens.
    expect(report.totals.costUsd).toBeCloseTo(0.0012, 10);
    expect(report.groups.map((g) => g.key)).toEqual(['telegram:42', 'web:u', 'telegram:43']);
    const byModel = await reader().report({ since: '1d', by: 'model' });
    expect(byModel.groups.find((g) => g.key === 'mystery-model')?.figures).toMatchObject({ costUsd: 0, unpricedCalls: 1, inputTokens: 500 });
    expect(formatMoney(byModel.groups.find((g) => g.key === 'mystery-model')!.figures.costUsd, 1)).toBe('price unknown');
    const ledger = await readUsage(t.redis, store.keys('telegram:1'));
    expect(ledger.costMicroUsd).toBe(1200);
    expect((await reader().report({ since: '1d', by: 'chat' })).groups.find((g) => g.key === 'telegram:1')?.figures.costUsd).toBe(ledger.costMicroUsd / 1e6);
    expect((await reader().report({ since: '1d', by: 'channel' })).groups.map((g) => g.key)).toEqual(['telegram', 'web']);
    // Prometheus: the same committed usage, by channel and model only.
    const exposed = await metrics.registry.metrics();
    expect(exposed).toContain('chatgate_usage_cost_usd_total{channel="telegram",model="priced-model"} 0.0012');
    expect(exposed).toContain('chatgate_usage_tokens_total{channel="telegram",model="priced-model",kind="cached"} 200');
    expect(exposed).toContain('chatgate_usage_model_calls_total{channel="telegram",model="priced-model"} 2');
    expect(exposed).toContain('chatgate_usage_unpriced_calls_total{channel="web",model="mystery-model"} 1');
    expect(exposed).not.toMatch(/chatgate_usage_[a-z_]+\{[^}]*user=/);
    const hourly = await reader().report({ since: '2h', by: 'model' });
    expect(hourly.series.map((p) => [p.label, p.figures.calls])).toEqual([[hourLabelOf(NOW - HOUR), 0], [hourLabelOf(NOW), 3]]);
  });

  it('prices what compaction spent and saved, and says "price unknown" for a model without a price', async () => {
    await commit('web:c', 'web:u', mergeUsage(
      compactionUsageDelta('in-loop', 'compacted', 400_000, { model: 'priced-model', prices: PRICES }),
      summaryUsageDelta('priced-model', { promptTokens: 30_000, completionTokens: 2000, cachedTokens: 0 }, PRICES),
    ));
    await commit('web:d', undefined, compactionUsageDelta('hygiene', 'compacted', 1000, { model: 'mystery-model', prices: PRICES }));
    await commit('web:d', undefined, compactionUsageDelta('hygiene', 'noop', 0, { model: 'mystery-model', prices: PRICES }));
    const report = await reader().report({ since: '7d', by: 'chat' });
    expect(report.totals).toMatchObject({ compactions: 2, tokensRemoved: 401_000, compactionSpent: { calls: 1, tokens: 32_000, costUsd: 0.034, unpricedCalls: 0 } });
    expect(report.totals.compactionSaved).toEqual({ tokens: 401_000, costUsd: 0.4, unpricedTokens: 1000 });
    expect(compactionSentence(report.totals, report.span)).toBe('compaction spent $0.034 and saved $0.40 + price unknown (401,000 prompt tokens) in the last 7 days');
    const unpriced = report.groups.find((g) => g.key === 'web:d')!.figures;
    expect(compactionSentence(unpriced, 'today')).toBe('compaction spent $0.00 (no summariser call) and saved 1,000 prompt tokens (price unknown) today');
  });

  it('counts a commit refused as stale nowhere, and keeps hourly and daily buckets for their retention', async () => {
    const keys = store.keys('web:s');
    const fence = (await acquireLease(t.redis, keys))!;
    await expect(store.commit('web:s', { expectedVersion: 5, fence, usage: unreportedCallDelta('priced-model') })).rejects.toBeInstanceOf(StaleCommitError);
    await store.commit('web:s', { expectedVersion: 0, fence, usage: unreportedCallDelta('priced-model') });
    const hourKey = usageRollupKey('web:s', 'hour', hourLabelOf(NOW), t.keyPrefix);
    const dayKey = usageRollupKey('web:s', 'day', dayIdOf(NOW), t.keyPrefix);
    expect(await t.redis.hget(hourKey, 'format')).toBe('1');
    expect(await t.redis.pexpiretime(hourKey)).toBe(nextMonthAt(2, 11) + 14 * DAY);
    expect(await t.redis.pexpiretime(dayKey)).toBe(nextMonthAt(3, 0) + 400 * DAY);
    expect((await reader().report({ since: '1d', by: 'user' })).totals.calls).toBe(1);
    // The next day: today is empty, the last two days hold it.
    clock = NOW + DAY;
    expect((await reader().report({ since: '1d', by: 'user' })).totals.calls).toBe(0);
    expect((await reader().report({ since: '2d', by: 'user' })).totals.calls).toBe(1);
  });

  it('refuses a rollup of another format, and queries outside the rules', async () => {
    await commit('web:f', 'web:u', unreportedCallDelta('m'));
    const dayKey = usageRollupKey('web:f', 'day', dayIdOf(NOW), t.keyPrefix);
    await t.redis.hset(dayKey, 'format', '2');
    await expect(reader().report({ since: '1d', by: 'user' })).rejects.toBeInstanceOf(StoredFormatError);
    await expect(commit('web:f', 'web:u', unreportedCallDelta('m'))).rejects.toThrow(/has format 2; this chatgate writes 1/);
    await t.redis.del(dayKey);
    await expect(reader().report({ since: '15d', by: 'user' })).resolves.toBeDefined();
    await expect(reader().report({ since: '400h', by: 'user' })).rejects.toThrow(/since must be 1 to 336h/);
    await expect(reader().report({ since: 'last week', by: 'user' })).rejects.toBeInstanceOf(UsageQueryError);
    await expect(reader().report({ since: '7d', by: 'team' })).rejects.toThrow(/by must be one of user, chat, channel, model/);
  });

  it('adds usage outside a commit (a summary whose compaction was dropped) to the ledger and rollups, leaving the session as it was', async () => {
    const keys = store.keys('web:d');
    await store.addUsage('web:d', summaryUsageDelta('priced-model', { promptTokens: 3000, completionTokens: 500, cachedTokens: 0 }, PRICES), 'web:u');
    expect(await readUsage(t.redis, keys)).toMatchObject({ summaryPromptTokens: 3000, summaryCompletionTokens: 500, summaryCalls: 1, costMicroUsd: 4000 });
    expect(await t.redis.exists(keys.meta, keys.lease)).toBe(0);
    const report = await reader().report({ since: '1d', by: 'user' });
    expect(report.groups.map((g) => [g.key, g.figures.calls])).toEqual([['web:u', 1]]);
    expect(report.totals.compactionSpent).toMatchObject({ calls: 1, tokens: 3500, costUsd: 0.004 });
    expect(await metrics.registry.metrics()).toContain('chatgate_usage_cost_usd_total{channel="web",model="priced-model"} 0.004');
    // A stored counter that is no integer: refused, nothing written.
    await t.redis.hset(keys.usage, 'summaryCalls', 'x');
    await expect(store.addUsage('web:d', summaryUsageDelta('priced-model', { promptTokens: 1, completionTokens: 1, cachedTokens: 0 }, PRICES))).rejects.toThrow(/usage field summaryCalls holds a non-integer/);
    expect(await readUsage(t.redis, keys)).toMatchObject({ summaryPromptTokens: 3000 });
    expect((await reader().report({ since: '1d', by: 'user' })).totals.calls).toBe(1);
  });
});
