import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText } from '../../src/core/messages.js';
import { SUMMARIZER_MARK } from '../../src/llm/summarizer.js';
import { createTurnProducer, type TurnProducer } from '../../src/queue/producer.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript, type StoredTranscriptEntry } from '../../src/redis/transcript.js';
import { readUsage } from '../../src/redis/usage.js';
import { runWorker, type RunningWorker } from '../../workers/main.js';
import { defineTool } from '../../workers/tools/types.js';
import { startFakeOpenAI, type FakeOpenAI, type FakeReply, type FakeRequest } from '../fakes/openai-server.js';
import { collectOutbound, createTestRedis, type OutboundCollector, type TestRedis } from '../helpers/redis.js';

const TURNS = 200;
const WINDOW = 16_000;
const TRIGGER = WINDOW * 0.5;
const SESSION = 'telegram:777';
const NOTE = 'Customer VIP-9931 wants invoices by email';

const getOrder = defineTool({
  name: 'get_order',
  description: 'Looks up an order by id.',
  schema: z.object({ id: z.string() }),
  run: ({ id }) => Array.from({ length: 60 }, (_, i) => `${id} line ${i}: widget-${i} qty ${i % 7} warehouse B-${i * 13} status shipped`).join('\n'),
});

const isSummary = (r: FakeRequest) => messageText(r.messages[0]).startsWith(SUMMARIZER_MARK);
const lastOf = <T>(items: T[]): T => items[items.length - 1];

/** The scripted model: every user turn looks up an order (turn 3 also remembers a note), then answers. */
function scriptedModel(summaries: string[]) {
  return (r: FakeRequest): FakeReply => {
    if (isSummary(r)) {
      const text = `## Goal\nhelp with orders (summary v${summaries.length + 1})\n## References (ids, paths, URLs)\nsee pinned facts`;
      summaries.push(text);
      return { content: text };
    }
    const last = lastOf(r.messages);
    if (last.role === 'tool') return { content: `Here is what I found (${r.index}).` };
    const turn = Number(/turn (\d+)/.exec(messageText(last))?.[1] ?? 0);
    if (turn === 3) return { toolCalls: [{ name: 'remember', arguments: { key: 'vip', note: NOTE } }, { name: 'get_order', arguments: { id: `ORD-${turn}-XK` } }] };
    if (turn === TURNS - 1) return { toolCalls: [{ name: 'search_history', arguments: { query: 'ORD-5-XK line 3:' } }] };
    return { toolCalls: [{ name: 'get_order', arguments: { id: `ORD-${turn}-XK` } }, { name: 'calculator', arguments: { expression: `${turn} * 3` } }] };
  };
}

describe('long session (test 3)', () => {
  let t: TestRedis;
  let fake: FakeOpenAI;
  let worker: RunningWorker;
  let producer: TurnProducer;
  let out: OutboundCollector;
  const summaries: string[] = [];
  let transcript: StoredTranscriptEntry[];

  beforeAll(async () => {
    t = createTestRedis();
    fake = await startFakeOpenAI(scriptedModel(summaries));
    producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix });
    out = await collectOutbound(t);
    worker = await runWorker({ redis: t.redis, tools: [getOrder] }, {
      keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, contextWindow: WINDOW, threshold: 0.5,
      llm: { baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o-mini' }, concurrency: 1,
    });
    const started = Date.now();
    for (let turn = 0; turn < TURNS; turn++) {
      await producer.submitInbound(message(turn));
      // One reply per turn; a compaction's one-line notice comes as an extra message.
      await out.waitFor((r) => r.filter((m) => m.kind === 'reply').length === turn + 1);
    }
    transcript = await readTranscript(t.redis, sessionKeys(SESSION, t.keyPrefix));
    const outcomes = transcript.flatMap((e) => (e.type === 'compaction' ? [`${e.layer}:${e.outcome}`] : []));
    const tally = new Map<string, number>();
    for (const outcome of outcomes) tally.set(outcome, (tally.get(outcome) ?? 0) + 1);
    const counts = [...tally].map(([k, n]) => `${k}=${n}`).join(' ');
    console.log(`[long-session] ${TURNS} turns, ${fake.requests.length} model requests, ${summaries.length} summaries, compactions ${counts}, ${Date.now() - started} ms`);
  }, 120_000);

  afterAll(async () => {
    await worker?.close();
    await out?.close();
    await producer?.close();
    await fake?.close();
    await t?.cleanup();
  });

  it('never sends a request over the window, and compacts at the 50% line', () => {
    const agent = fake.requests.filter((r) => !isSummary(r));
    expect(Math.max(...fake.requests.map((r) => r.promptTokens))).toBeLessThanOrEqual(WINDOW);
    expect(Math.max(...agent.map((r) => r.promptTokens))).toBeLessThan(TRIGGER);
    const inLoop = transcript.filter((e) => e.type === 'compaction' && e.layer === 'in-loop');
    expect(inLoop.length).toBeGreaterThan(5);
    for (const event of inLoop) if (event.type === 'compaction') expect(event.requestTokens).toBeGreaterThanOrEqual(TRIGGER);
    expect(Math.max(...agent.map((r) => r.promptTokens))).toBeGreaterThan(TRIGGER * 0.8);
  });

  it('updates the previous summary in every later summariser prompt', () => {
    const prompts = fake.requests.filter(isSummary).map((r) => messageText(lastOf(r.messages)));
    expect(prompts.length).toBeGreaterThanOrEqual(2);
    expect(prompts[0]).not.toContain('<previous-summary>');
    for (let i = 1; i < prompts.length; i++) {
      expect(prompts[i]).toContain('<previous-summary>');
      expect(prompts[i]).toContain(`(summary v${i})`);
    }
  });

  it('keeps every message ever sent in the transcript and answers every turn', () => {
    const messages = transcript.filter((e) => e.type === 'message');
    const userIds = messages.flatMap((e) => (e.type === 'message' && e.message.role === 'user' ? [e.inboundId] : []));
    expect(userIds).toEqual(Array.from({ length: TURNS }, (_, turn) => `telegram:777:${turn}`));
    const agentAnswers = fake.requests.filter((r) => !isSummary(r)).length;
    expect(messages.filter((e) => e.type === 'message' && e.message.role === 'assistant')).toHaveLength(agentAnswers);
    expect(out.replies.filter((r) => r.kind === 'reply')).toHaveLength(TURNS);
    // Nothing went wrong: the only other messages are the compactions' one-line notices, one per in-loop compaction that changed something.
    const notices = out.replies.filter((r) => r.kind !== 'reply');
    expect(notices.every((r) => r.text.startsWith('Compacted the earlier conversation'))).toBe(true);
    expect(notices).toHaveLength(transcript.filter((e) => e.type === 'compaction' && e.outcome !== 'noop' && e.outcome !== 'aborted').length);
  });

  it('keeps remembered notes in the last request and finds compacted detail with search_history', async () => {
    const last = lastOf(fake.requests.filter((r) => !isSummary(r)));
    expect(messageText(last.messages[1])).toContain(NOTE);
    const searchResult = last.messages.filter((m) => m.role === 'tool').map(messageText).join('\n');
    expect(searchResult).toContain('ORD-5-XK line 3:');
    const usage = await readUsage(t.redis, sessionKeys(SESSION, t.keyPrefix));
    expect(usage.calls).toBe(fake.requests.filter((r) => !isSummary(r)).length);
    expect(usage.tokensRemovedByCompaction).toBeGreaterThan(0);
  });
});

function message(turn: number): InboundMessage {
  return {
    id: `telegram:777:${turn}`, channel: 'telegram', chatId: '777', userId: '1', userName: 'Bo',
    text: `turn ${turn}: what is the status of order ORD-${turn}-XK?`, attachments: [], receivedAt: Date.now(),
  };
}
