/**
 * Compaction while nobody waits: a session that went quiet with its next request expected over the
 * in-loop line is compacted in the background by a worker (layer `idle`), so the next message's turn
 * makes no summariser call; a message arriving during that compaction wins and the compaction is dropped.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBudgetLedger } from '../../src/budget/ledger.js';
import { NO_BUDGETS } from '../../src/core/budget.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { readUsage } from '../../src/redis/usage.js';
import { parseMeta } from '../../src/redis/session-store.js';
import { createUsageReader } from '../../src/usage/read-model.js';
import type { FakeReply } from '../fakes/openai-server.js';
import { isSummaryRequest } from '../helpers/stack.js';
import { pollUntil } from '../helpers/waits.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const SESSION = 'web:idle';
let n = 0;
const inbound = (text: string): InboundMessage => ({ id: `web:idle:${++n}`, channel: 'web', chatId: 'idle', userId: 'u', userName: 'U', text, attachments: [], receivedAt: Date.now() });
const words = (count: number, salt: string) => Array.from({ length: count }, (_, k) => `${salt}${k % 97}`).join(' ');

describe('idle compaction', () => {
  let rig: WorkerRig;
  let summary: () => FakeReply | Promise<FakeReply>;

  beforeEach(async () => {
    rig = await openWorkerRig();
    summary = () => ({ content: 'Goal: keep talking. Active state: two long exchanges so far.' });
    rig.fake.setHandler((request) => (isSummaryRequest(request) ? summary() : { content: `Answer. ${words(1200, 'a')}` }));
  });
  afterEach(async () => { await rig.close(); });

  /** Two long exchanges: the request ends under the in-loop line (8,000 of 16,000), the next one is expected over it. */
  async function twoExchanges(): Promise<void> {
    for (const k of [1, 2]) {
      await rig.producer.submitInbound(inbound(`Question ${k}. ${words(1200, `q${k}`)}`));
      await rig.out.waitFor((replies) => replies.length >= k);
    }
  }

  it('compacts a quiet session in the background, so the next turn calls no summariser', async () => {
    await rig.start({ idleCompactSeconds: 1 });
    await twoExchanges();
    expect(rig.fake.requests.some(isSummaryRequest)).toBe(false);
    const keys = sessionKeys(SESSION, rig.t.keyPrefix);
    await pollUntil(async () => (await readUsage(rig.t.redis, keys)).compactions['idle:compacted'] === 1, { intervalMs: 50 });
    const event = (await readTranscript(rig.t.redis, keys)).find((e) => e.type === 'compaction');
    expect(event).toMatchObject({ type: 'compaction', layer: 'idle', outcome: 'compacted' });

    const before = rig.fake.requests.length;
    await rig.producer.submitInbound(inbound('And a short third question?'));
    await rig.out.waitFor((replies) => replies.some((r) => r.text.startsWith('Compacted the earlier conversation')));
    expect(rig.fake.requests.slice(before).some(isSummaryRequest)).toBe(false);
  });

  it('keeps the notice for the next reply instead of writing to the quiet chat, and sends it once, after that reply', async () => {
    await rig.start({ idleCompactSeconds: 1 });
    await twoExchanges();
    const keys = sessionKeys(SESSION, rig.t.keyPrefix);
    await pollUntil(async () => (await readUsage(rig.t.redis, keys)).compactions['idle:compacted'] === 1, { intervalMs: 50 });
    // Committed with the compaction: held in the session, not sent.
    const held = parseMeta(await rig.t.redis.hgetall(keys.meta)).heldNotices;
    expect(held).toEqual([expect.stringMatching(/^Compacted the earlier conversation/)]);
    expect(rig.out.replies.map((r) => r.kind)).toEqual(['reply', 'reply']);

    await rig.producer.submitInbound(inbound('And a short third question?'));
    await rig.out.waitFor((replies) => replies.length >= 4);
    expect(rig.out.replies.slice(2).map((r) => [r.kind, r.text.slice(0, 7)])).toEqual([['reply', 'Answer.'], ['notice', 'Compact']]);
    expect(rig.out.replies[3]!.text).toBe(held[0]);
    // Cleared in the reply's commit: no later reply brings it again.
    expect(parseMeta(await rig.t.redis.hgetall(keys.meta)).heldNotices).toEqual([]);
  });

  it('counts its summary for the turn\'s user and the chat, like every model call', async () => {
    const budgets = { ...NO_BUDGETS, user: { day: { tokens: 1e9 } }, chat: { day: { tokens: 1e9 } }, deployment: { day: { tokens: 1e9 } } };
    await rig.start({ idleCompactSeconds: 1, budgets });
    await twoExchanges();
    const keys = sessionKeys(SESSION, rig.t.keyPrefix);
    await pollUntil(async () => (await readUsage(rig.t.redis, keys)).compactions['idle:compacted'] === 1, { intervalMs: 50 });
    await pollUntil(async () => (await rig.t.redis.exists(keys.lease)) === 0, { intervalMs: 50 });
    const state = await createBudgetLedger(rig.t.redis, { keyPrefix: rig.t.keyPrefix, settings: budgets }).state({ user: 'web:u', chat: SESSION });
    const used = Object.fromEntries(state.filter((c) => c.period === 'day').map((c) => [c.level, c.usedTokens]));
    // Two turns and the summary: the deployment counted nothing the user and the chat did not.
    expect(used.user).toBeGreaterThan(0);
    expect(used).toEqual({ user: used.deployment, chat: used.deployment, deployment: used.deployment });
  });

  it('yields to a message that arrives during the summary: the turn runs at once, the background compaction is dropped', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    let summaries = 0;
    // The idle compaction's summary waits; any later one (the turn's own, in the loop) is answered at once.
    summary = async () => {
      if (++summaries === 1) {
        await held;
        return { content: 'Goal: keep talking (dropped summary).', usage: { prompt_tokens: 7000, completion_tokens: 300 } };
      }
      return { content: `Goal: keep talking (summary ${summaries}).`, usage: { prompt_tokens: 5000, completion_tokens: 200 } };
    };
    await rig.start({ idleCompactSeconds: 1 });
    await twoExchanges();
    await rig.fake.waitForRequest(isSummaryRequest);
    await rig.producer.submitInbound(inbound('Still there?'));
    // Answered while the background summary still waits: the message did not wait for it.
    await rig.out.waitFor((replies) => replies.filter((r) => r.text.startsWith('Answer.')).length >= 3);
    release();
    const keys = sessionKeys(SESSION, rig.t.keyPrefix);
    await pollUntil(async () => (await rig.t.redis.exists(keys.lease)) === 0, { intervalMs: 50 });
    const layers = (await readTranscript(rig.t.redis, keys)).flatMap((e) => (e.type === 'compaction' ? [e.layer] : []));
    expect(layers).toEqual(['in-loop']);
    // The dropped compaction's summary was paid for: the ledger and the rollups count it beside the turn's own.
    await pollUntil(async () => (await readUsage(rig.t.redis, keys)).summaryCalls === 2, { intervalMs: 50, what: 'the dropped summary counted' });
    const usage = await readUsage(rig.t.redis, keys);
    expect(usage.compactions['idle:compacted'] ?? 0).toBe(0);
    expect(usage).toMatchObject({ summaryPromptTokens: 12_000, summaryCompletionTokens: 500 });
    const report = await createUsageReader(rig.t.redis, { keyPrefix: rig.t.keyPrefix }).report({ since: '1d', by: 'chat' });
    expect(report.totals.compactionSpent).toMatchObject({ calls: 2, tokens: 12_500 });
  });
});
