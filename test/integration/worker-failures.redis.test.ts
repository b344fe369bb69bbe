import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText } from '../../src/core/messages.js';
import { replyJobId } from '../../src/queue/names.js';
import type { TurnProducer } from '../../src/queue/producer.js';
import { claimInbox } from '../../src/redis/inbox.js';
import { acquireLease } from '../../src/redis/lease.js';
import { sessionKeys, type SessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { TURN_NOTICES } from '../../workers/agent.processor.js';
import { defineTool } from '../../workers/tools/types.js';
import type { FakeOpenAI } from '../fakes/openai-server.js';
import { createLogSink, type LogSink } from '../helpers/log-sink.js';
import type { OutboundCollector, TestRedis } from '../helpers/redis.js';
import { openWorkerRig, type WorkerRig, type WorkerStartOptions } from '../helpers/worker-rig.js';

const SESSION = 'web:chat1';
let seq = 0;

function inbound(text: string): InboundMessage {
  seq++;
  return { id: `web:chat1:${seq}`, channel: 'web', chatId: 'chat1', userId: 'u1', userName: 'Ann', text, attachments: [], receivedAt: Date.now() };
}

describe('worker failures', () => {
  let rig: WorkerRig;
  let t: TestRedis;
  let fake: FakeOpenAI;
  let producer: TurnProducer;
  let out: OutboundCollector;
  let sink: LogSink;
  let keys: SessionKeys;

  const start = (options: WorkerStartOptions = {}) => rig.start({ logger: sink.logger, concurrency: 2, ...options });

  beforeEach(async () => {
    rig = await openWorkerRig();
    ({ t, fake, producer, out } = rig);
    sink = createLogSink();
    keys = sessionKeys(SESSION, t.keyPrefix);
  });
  afterEach(async () => { await rig.close(); });

  it('dead-letters the messages of a turn that fails on its last attempt, tells the user, and the session goes on', async () => {
    producer = await rig.replaceProducer({ attempts: 2 });
    await start();
    fake.setHandler(() => ({ content: 'answered' }));
    // A session whose meta cannot be read: every attempt of the turn throws.
    await t.redis.hset(keys.meta, 'route', '{not json');
    const lost = inbound('this one breaks');
    await producer.submitInbound(lost);

    const first = await sink.waitFor((line) => line.msg === 'turn job failed');
    expect(first).toMatchObject({ final: false, sessionId: SESSION, channel: 'web' });
    expect(await t.redis.lrange(keys.processing, 0, -1)).toHaveLength(1);
    expect(out.replies).toHaveLength(0);

    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]).toEqual({
      id: replyJobId([lost.id], 'failed'), sessionId: SESSION, channel: 'web', chatId: 'chat1', kind: 'notice', text: TURN_NOTICES.failed(1),
      // It answers in place of the reply: it ends that reply's stream of partials, and names the messages it answers.
      liveReplyId: replyJobId([lost.id], 'reply'), answers: [lost.id],
    });
    expect(await t.redis.exists(keys.processing)).toBe(0);
    expect((await t.redis.lrange(keys.failed, 0, -1)).map((raw) => (JSON.parse(raw) as InboundMessage).id)).toEqual([lost.id]);
    const deadLetter = await sink.waitFor((line) => line.msg.startsWith('turn failed for good'));
    expect(deadLetter).toMatchObject({ messages: 1, inboundIds: [lost.id], sessionId: SESSION, channel: 'web' });
    expect(fake.requests).toHaveLength(0);

    await t.redis.hdel(keys.meta, 'route');
    const next = inbound('hello again');
    await producer.submitInbound(next);
    await out.waitFor((r) => r.length === 2);
    expect(out.replies[1]).toMatchObject({ kind: 'reply', text: 'answered', id: replyJobId([next.id]) });
    expect(fake.requests.map((r) => r.messages.filter((m) => m.role === 'user').map(messageText))).toEqual([[expect.stringContaining('hello again')]]);
    expect(await t.redis.llen(keys.failed)).toBe(1);
    expect(await t.redis.exists(keys.processing)).toBe(0);
  });

  it('dead-letters the messages of a turn whose job stalled too often (its worker died), under the lease', async () => {
    const lost = inbound('taken by a worker that died');
    await producer.submitInbound(lost);
    // A worker that takes the job and the messages, then dies: its job lock is never renewed.
    const dead = new Worker('turns', null, { connection: t.redis, prefix: t.queuePrefix, autorun: false, lockDuration: 200 });
    const job = await dead.getNextJob(randomUUID());
    expect(job?.data).toEqual({ sessionId: SESSION });
    expect(await acquireLease(t.redis, keys, 500)).not.toBeNull();
    await claimInbox(t.redis, keys);
    await dead.close(true);

    // Its job is failed for good at the first stall; its session lease is still there for a while.
    await start({ maxStalledCount: 0, stalledIntervalMs: 100, lockDurationMs: 1000, leaseRetryMs: 50 });
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]).toMatchObject({ id: replyJobId([lost.id], 'failed'), kind: 'notice', text: TURN_NOTICES.failed(1), answers: [lost.id] });
    expect(await t.redis.exists(keys.processing)).toBe(0);
    expect(await t.redis.llen(keys.failed)).toBe(1);
    expect(sink.lines.find((line) => line.msg === 'turn job failed')).toMatchObject({ final: true, jobId: job?.id });

    await producer.submitInbound(inbound('still there?'));
    await out.waitFor((r) => r.length === 2);
    expect(out.replies[1]).toMatchObject({ kind: 'reply', text: 'ok' });
  });

  it('moves an inbox item that is not a message to the dead letters and answers the rest', async () => {
    await t.redis.rpush(keys.inbox, 'garbage {', JSON.stringify({ id: 'web:chat1:x' }));
    await start();
    await producer.submitInbound(inbound('fine'));
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]).toMatchObject({ kind: 'reply', text: 'ok' });
    expect(await t.redis.lrange(keys.failed, 0, -1)).toEqual(['garbage {', JSON.stringify({ id: 'web:chat1:x' })]);
    expect(sink.lines.find((line) => line.msg === 'malformed inbox items moved to the dead-letter list')).toMatchObject({ malformed: 2, sessionId: SESSION });
    expect(await t.redis.exists(keys.processing)).toBe(0);
  });

  it('stops a turn whose lease was lost before the next tool or model call, without a reply or a spent attempt', async () => {
    const ran: string[] = [];
    // Another worker takes the session over while this turn runs its tools (the first time only).
    const takeover = defineTool({ name: 'takeover', description: 'x', schema: z.object({}), run: async () => {
      ran.push('takeover');
      if (ran.length === 1) await t.redis.set(keys.lease, '999999', 'PX', 300);
      return 'taken';
    } });
    const after = defineTool({ name: 'after', description: 'x', schema: z.object({}), run: () => { ran.push('after'); return 'ran'; } });
    await start({ tools: [takeover, after], leaseRetryMs: 50 });
    fake.setHandler((r) => (r.index === 0 ? { toolCalls: [{ name: 'takeover', arguments: {} }, { name: 'after', arguments: {} }] } : { content: 'done' }));
    const message = inbound('go');
    await producer.submitInbound(message);

    await out.waitFor((r) => r.length === 1);
    expect(out.replies).toEqual([expect.objectContaining({ id: replyJobId([message.id]), kind: 'reply', text: 'done' })]);
    // The retried turn resumes the round from its step log: the model is not asked again, the call
    // whose result was never recorded runs again, `after` runs only then.
    expect(ran).toEqual(['takeover', 'takeover', 'after']);
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1].messages.filter((m) => m.role === 'tool').map(messageText)).toEqual(['taken', 'ran']);
    expect(sink.lines.filter((line) => line.msg === 'turn aborted: the session lease was lost')).toHaveLength(1);
    expect(sink.lines.filter((line) => line.msg === 'turn job failed')).toEqual([]);
    const transcript = await readTranscript(t.redis, keys);
    expect(transcript.map((e) => (e.type === 'message' ? e.message.role : e.type))).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
    const turns = new Queue('turns', { connection: t.redis, prefix: t.queuePrefix });
    // The reply is enqueued before the job completes: wait for its completion.
    const [job] = await vi.waitFor(async () => {
      const completed = await turns.getJobs(['completed']);
      expect(completed).toHaveLength(1);
      return completed;
    }, { timeout: 5000, interval: 20 });
    await turns.close();
    // Completion counts as the one attempt made: the lost lease spent none.
    expect(job.attemptsMade).toBe(1);
    expect(job.stacktrace).toEqual([]);
  });
});
