import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCompactionState } from '../../src/core/compaction-state.js';
import type { ChatMessage } from '../../src/core/messages.js';
import { renderPinned, renderSummaryBlock } from '../../src/core/summary-block.js';
import { acquireLease, releaseLease } from '../../src/redis/lease.js';
import { createSessionNotes } from '../../src/redis/notes.js';
import { createRedisSessionView } from '../../src/redis/session-reader.js';
import { createSessionStore, toEntry, type StoredEntry } from '../../src/redis/session-store.js';
import type { TranscriptEntry } from '../../src/redis/transcript.js';
import { callUsageDelta, compactionUsageDelta, mergeUsage } from '../../src/redis/usage.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const WINDOW = 16_000;
const T0 = Date.UTC(2026, 0, 15, 9, 0, 0);

describe('Redis session reader', () => {
  let t: TestRedis;

  beforeEach(() => { t = createTestRedis(); });
  afterEach(async () => { await t.cleanup(); });

  const reader = () => createRedisSessionView({ redis: t.redis }, { keyPrefix: t.keyPrefix, contextWindow: WINDOW, threshold: 0.5, hygieneThreshold: 0.85, reservedOutputTokens: 4000 });

  /** Commits one step of a session under its lease at time `atMs`. */
  async function commitStep(id: string, atMs: number, step: { append?: StoredEntry[]; replace?: StoredEntry[]; transcript: TranscriptEntry[]; usage?: ReturnType<typeof mergeUsage>; meta?: Record<string, unknown> }) {
    const store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix, now: () => atMs });
    const keys = store.keys(id);
    const fence = (await acquireLease(t.redis, keys))!;
    const snapshot = await store.load(id);
    await store.commit(id, {
      expectedVersion: snapshot.meta.version, fence, transcript: step.transcript, usage: step.usage, meta: step.meta,
      projection: step.replace ? { replace: step.replace } : step.append ? { append: step.append } : undefined,
    });
    await releaseLease(t.redis, keys, fence);
  }

  const message = (entry: StoredEntry, atMs: number): TranscriptEntry => ({ type: 'message', message: entry.message, tokens: entry.tokens, atMs });

  /** A turn: user asks, assistant answers; the provider reports `promptTokens`. */
  async function turn(id: string, atMs: number, ask: string, answer: string, promptTokens: number) {
    const entries = [toEntry({ role: 'user', content: ask }), toEntry({ role: 'assistant', content: answer })];
    await commitStep(id, atMs, {
      append: entries, transcript: entries.map((e) => message(e, atMs)),
      usage: callUsageDelta('gpt-4o-mini', { promptTokens, completionTokens: 40, cachedTokens: 10 }, WINDOW),
      meta: { route: { channel: id.split(':')[0], chatId: id.split(':')[1] }, lastPromptTokens: promptTokens, appendedTokensSince: 0, overheadTokens: 300 },
    });
  }

  it('lists sessions by last activity or by fill, pages them and filters by channel', async () => {
    await turn('telegram:1', T0 + 1000, 'hello', 'hi', 9000);
    await turn('discord:2', T0 + 3000, 'hey', 'hello there', 2000);
    await turn('web:abc', T0 + 2000, 'yo', 'hi!', 5000);
    const r = reader();
    const byActivity = await r.listSessions();
    expect(byActivity.items.map((row) => row.id)).toEqual(['discord:2', 'web:abc', 'telegram:1']);
    expect(byActivity.total).toBe(3);
    const byFill = await r.listSessions({ sort: 'fill' });
    expect(byFill.items.map((row) => row.id)).toEqual(['telegram:1', 'web:abc', 'discord:2']);
    expect(byFill.items[0]).toMatchObject({ channel: 'telegram', messages: 2, contextTokens: 9000, contextWindow: WINDOW, fill: 9000 / WINDOW, promptTokens: 9000, completionTokens: 40, lastActivityAt: T0 + 1000, paused: false });
    expect(byFill.items[0].costUsd).toBeGreaterThan(0);
    const page = await r.listSessions({ sort: 'fill', offset: 1, limit: 1 });
    expect(page).toMatchObject({ total: 3, offset: 1, limit: 1 });
    expect(page.items.map((row) => row.id)).toEqual(['web:abc']);
    expect((await r.listSessions({ channel: 'web' })).items.map((row) => row.id)).toEqual(['web:abc']);
  });

  it('returns null for an unknown session', async () => {
    expect(await reader().getSession('web:nobody')).toBeNull();
  });

  it('details a compacted session: ledger, fill history, compaction timeline, summary, pinned facts and notes', async () => {
    const id = 'telegram:7';
    await turn(id, T0 + 1000, 'my order is ORD-48213-XK', 'noted', 3000);
    const remember: ChatMessage = { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'remember', arguments: '{"key":"order","note":"ORD-48213-XK"}' } }] };
    const calls = [toEntry(remember), toEntry({ role: 'tool', tool_call_id: 'c1', content: 'remembered "order"' })];
    await commitStep(id, T0 + 2000, { append: calls, transcript: calls.map((e) => message(e, T0 + 2000)), usage: callUsageDelta('gpt-4o-mini', { promptTokens: 3500, completionTokens: 20, cachedTokens: 0 }, WINDOW) });
    await createSessionNotes(t.redis, createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix }).keys(id)).set('order', 'ORD-48213-XK');
    await turn(id, T0 + 3000, 'and ticket #4471?', 'on it', 7000);
    const block = renderSummaryBlock('## Goal\nTrack the order.', renderPinned(['ORD-48213-XK', '#4471'], 0));
    const summary = toEntry({ role: 'user', content: block });
    const tail = toEntry({ role: 'assistant', content: 'on it' });
    await commitStep(id, T0 + 4000, {
      replace: [summary, tail],
      transcript: [{ type: 'compaction', layer: 'in-loop', outcome: 'compacted', tokensBefore: 7000, tokensAfter: 1200, model: 'gpt-4o-mini', durationMs: 850, reason: 'summarised 6 messages', atMs: T0 + 4000 }],
      usage: compactionUsageDelta('in-loop', 'compacted', 5800),
      meta: { compaction: { ...createCompactionState(), compactions: 1, lastOutcome: 'compacted' }, lastPromptTokens: 0, appendedTokensSince: 0 },
    });
    await turn(id, T0 + 5000, 'thanks', 'you are welcome', 2500);

    const detail = (await reader().getSession(id))!;
    expect(detail.session).toMatchObject({ id, channel: 'telegram', messages: 8, compactions: 1, contextTokens: 2500, lastActivityAt: T0 + 5000 });
    expect(detail.ledger).toMatchObject({ promptTokens: 3000 + 3500 + 7000 + 2500, completionTokens: 140, cachedTokens: 30, calls: 4, compactions: 1, tokensRemoved: 5800, lastPromptTokens: 2500 });
    expect(detail.ledger.compactionsByLayer).toEqual({ 'in-loop': { compacted: 1 } });
    expect(detail.thresholds.compress).toBeCloseTo(0.5 * 12_000 / WINDOW);
    expect(detail.thresholds.hygiene).toBeCloseTo(0.85 * 12_000 / WINDOW);
    expect(detail.compactions).toEqual([{ turn: 2, at: T0 + 4000, layer: 'in-loop', outcome: 'compacted', tokensBefore: 7000, tokensAfter: 1200, durationMs: 850, model: 'gpt-4o-mini', reason: 'summarised 6 messages' }]);
    expect(detail.fillHistory.map((p) => p.turn)).toEqual([1, 2, 3]);
    // Replayed estimate: overhead + counted messages; after a compaction its tokensAfter + what followed.
    const tokensOf = (...texts: string[]) => texts.reduce((sum, text) => sum + toEntry({ role: 'user', content: text }).tokens, 0);
    const last = detail.fillHistory[2];
    expect(last.tokens).toBe(300 + 1200 + tokensOf('thanks') + toEntry({ role: 'assistant', content: 'you are welcome' }).tokens);
    expect(last.fill).toBeCloseTo(last.tokens / WINDOW);
    expect(detail.fillHistory[0].at).toBe(T0 + 1000);
    expect(detail.summary).toBe('## Goal\nTrack the order.');
    expect(detail.pinnedFacts).toEqual(['ORD-48213-XK', '#4471']);
    expect(detail.notes).toEqual([{ key: 'order', text: 'ORD-48213-XK', at: T0 + 2000 }]);
  });

  it('shows a paused session and a reset that empties the context', async () => {
    const id = 'web:p';
    await turn(id, T0, 'a long question', 'a long answer', 6000);
    await commitStep(id, T0 + 1000, {
      replace: [],
      transcript: [{ type: 'compaction', layer: 'manual', outcome: 'noop', tokensBefore: 6000, tokensAfter: 0, model: 'reset', durationMs: 0, reason: 'reset', atMs: T0 + 1000 }],
      meta: { compaction: { ...createCompactionState(), paused: true }, lastPromptTokens: 0, appendedTokensSince: 0 },
    });
    await turn(id, T0 + 2000, 'hi', 'hello', 400);
    const detail = (await reader().getSession(id))!;
    expect(detail.session.paused).toBe(true);
    expect(detail.fillHistory[1].tokens).toBeLessThan(detail.fillHistory[0].tokens);
    expect(detail.summary).toBeNull();
    expect(detail.pinnedFacts).toEqual([]);
  });
});
