import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage, OutboundMessage } from '../../src/core/inbound.js';
import { messageText, type ChatMessage } from '../../src/core/messages.js';
import type { TurnProducer } from '../../src/queue/producer.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import type { FakeOpenAI, FakeReply, FakeRequest } from '../fakes/openai-server.js';
import { waitForLine } from '../helpers/cli-worker.js';
import type { OutboundCollector, TestRedis } from '../helpers/redis.js';
import { FAST_LEASES, openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const PROCESSES = 3;
const SESSIONS = 30;
const MESSAGES = 20;

describe('worker processes', () => {
  let rig: WorkerRig;
  let t: TestRedis;
  let fake: FakeOpenAI;
  let producer: TurnProducer;
  let out: OutboundCollector;

  // The real entry point, `chatgate worker`, configured through the environment as in production.
  const startWorker = (): Promise<ChildProcess> => rig.spawnCliWorker(FAST_LEASES);

  beforeEach(async () => {
    rig = await openWorkerRig();
    ({ t, fake, producer, out } = rig);
  });
  afterEach(async () => { await rig.close(); });

  it('answers every message once, in order, with no overlapping turns, across 3 `chatgate worker` processes (test 1)', async () => {
    const inFlight = new Map<string, number>();
    let overlaps = 0;
    fake.setHandler(async (r) => {
      const { session, seqs } = turnOf(r.messages);
      inFlight.set(session, (inFlight.get(session) ?? 0) + 1);
      if (inFlight.get(session)! > 1) overlaps++;
      await new Promise((resolve) => setTimeout(resolve, 2 + (r.index % 7)));
      inFlight.set(session, inFlight.get(session)! - 1);
      return { content: `ack ${session} ${seqs.join(',')}` };
    });
    const started = Date.now();
    await Promise.all(Array.from({ length: PROCESSES }, startWorker));
    const submitStarted = Date.now();
    for (let m = 0; m < MESSAGES; m++) {
      await Promise.all(Array.from({ length: SESSIONS }, (_, s) => producer.submitInbound(inbound(s, m))));
    }
    await out.waitFor((replies) => covered(replies) === SESSIONS * MESSAGES);
    const wallMs = Date.now() - submitStarted;
    console.log(`[worker-processes] ${SESSIONS * MESSAGES} messages, ${SESSIONS} sessions, ${PROCESSES} processes, ${out.replies.length} turns: ${wallMs} ms from first submit to last reply (${Date.now() - started} ms with process start)`);

    expect(overlaps).toBe(0);
    for (let s = 0; s < SESSIONS; s++) {
      const seqs = out.replies.filter((r) => r.chatId === `c${s}`).flatMap((r) => replySeqs(r));
      expect(seqs).toEqual(Array.from({ length: MESSAGES }, (_, m) => m));
      const keys = sessionKeys(`web:c${s}`, t.keyPrefix);
      expect(await t.redis.llen(keys.inbox)).toBe(0);
      expect(await t.redis.exists(keys.processing)).toBe(0);
      expect(await userIdsInTranscript(t, s)).toEqual(Array.from({ length: MESSAGES }, (_, m) => `web:c${s}:${m}`));
    }
  });

  it('finishes a turn whose worker was SIGKILLed mid-call on another worker, answering each message once (test 2)', async () => {
    let release: ((reply: FakeReply) => void) | null = null;
    let onHeld = (): void => undefined;
    const held = new Promise<void>((resolve) => { onHeld = resolve; });
    fake.setHandler((r) => {
      const { session, seqs } = turnOf(r.messages);
      if (seqs.includes(0) && release === null) {
        onHeld();
        return { hold: new Promise<FakeReply>((resolve) => { release = resolve; }) };
      }
      return { content: `ack ${session} ${seqs.join(',')}` };
    });
    const victim = await startWorker();
    await producer.submitInbound(inbound(0, 0));
    await held;
    await producer.submitInbound(inbound(0, 1));
    await producer.submitInbound(inbound(0, 2));
    await startWorker();
    victim.kill('SIGKILL');
    await once(victim, 'exit');

    await out.waitFor((replies) => covered(replies) === 3);
    await rig.turnsDrained();
    expect(out.replies.flatMap(replySeqs).sort()).toEqual([0, 1, 2]);
    expect(new Set(out.replies.map((r) => r.id)).size).toBe(out.replies.length);
    expect(await userIdsInTranscript(t, 0)).toEqual(['web:c0:0', 'web:c0:1', 'web:c0:2']);
    const keys = sessionKeys('web:c0', t.keyPrefix);
    const assistant = (await readTranscript(t.redis, keys)).filter((e) => e.type === 'message' && e.message.role === 'assistant');
    expect(assistant).toHaveLength(out.replies.length);
    expect(await t.redis.exists(keys.processing)).toBe(0);
    (release as ((reply: FakeReply) => void) | null)?.({ content: 'too late' });
  });

  it('drains the running turn on SIGTERM and exits 0', async () => {
    let release: ((reply: FakeReply) => void) | null = null;
    let onHeld = (): void => undefined;
    const held = new Promise<void>((resolve) => { onHeld = resolve; });
    fake.setHandler(() => {
      onHeld();
      return { hold: new Promise<FakeReply>((resolve) => { release = resolve; }) };
    });
    const child = await startWorker();
    await producer.submitInbound(inbound(5, 0));
    await held;
    const exited = once(child, 'exit');
    const draining = waitForLine(child, '"worker draining"');
    child.kill('SIGTERM');
    await draining;
    (release as ((reply: FakeReply) => void) | null)?.({ content: 'ack s5 0' });
    const [code] = await exited;
    expect(code).toBe(0);
    await out.waitFor((replies) => covered(replies) === 1);
    expect(await t.redis.exists(sessionKeys('web:c5', t.keyPrefix).processing)).toBe(0);
  });
});

function inbound(session: number, seq: number): InboundMessage {
  return { id: `web:c${session}:${seq}`, channel: 'web', chatId: `c${session}`, userId: 'u', userName: 'U', text: `s${session} m${seq}`, attachments: [], receivedAt: Date.now() };
}

/** The session and message numbers of the user messages after the last assistant message. */
function turnOf(messages: ChatMessage[]): { session: string; seqs: number[] } {
  let start = messages.length;
  while (start > 0 && messages[start - 1].role === 'user') start--;
  const texts = messages.slice(start).map(messageText);
  const session = /^s(\d+)/.exec(texts[0] ?? '')?.[1] ?? '?';
  return { session: `s${session}`, seqs: texts.map((text) => Number(/m(\d+)$/.exec(text)?.[1])) };
}

function replySeqs(reply: OutboundMessage): number[] {
  const list = /^ack s\d+ ([\d,]+)$/.exec(reply.text)?.[1];
  return list ? list.split(',').map(Number) : [];
}

function covered(replies: OutboundMessage[]): number {
  return replies.reduce((sum, reply) => sum + replySeqs(reply).length, 0);
}

async function userIdsInTranscript(t: TestRedis, session: number): Promise<string[]> {
  const entries = await readTranscript(t.redis, sessionKeys(`web:c${session}`, t.keyPrefix));
  return entries.flatMap((e) => (e.type === 'message' && e.message.role === 'user' && e.inboundId ? [e.inboundId] : []));
}


export type { FakeRequest };
