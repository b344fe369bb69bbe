/**
 * Steering under kill -9: a message that joined a running turn (steer) is neither lost nor doubled
 * when the worker running the turn dies, and the turn resumed on another worker answers both.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText, type ChatMessage } from '../../src/core/messages.js';
import { claimInbox, steerInbox } from '../../src/redis/inbox.js';
import { acceptInbound } from '../../src/redis/ingest.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { replyJobId } from '../../src/queue/names.js';
import { holdLease } from '../../src/redis/lease.js';
import { readTranscript } from '../../src/redis/transcript.js';
import type { FakeReply, FakeRequest } from '../fakes/openai-server.js';
import { gate, pollUntil } from '../helpers/waits.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const SESSION = 'web:s1';

function inbound(n: number, text: string): InboundMessage {
  return { id: `web:s1:${n}`, channel: 'web', chatId: 's1', userId: 'u', userName: 'U', text, attachments: [], receivedAt: Date.now(), busyMode: 'steer' };
}

const users = (messages: readonly ChatMessage[]) => messages.filter((m) => m.role === 'user').map(messageText);
const tools = (request: FakeRequest) => request.messages.filter((m) => m.role === 'tool').length;

describe('a steered message under kill -9', () => {
  let rig: WorkerRig;

  const startWorker = (block: boolean): Promise<ChildProcess> => rig.spawnEffectWorker({ EFFECT_BLOCK: block ? '1' : '0' });

  beforeEach(async () => { rig = await openWorkerRig(); });
  afterEach(async () => { await rig.close(); });

  it('joins the turn once, survives the worker dying in the next round, and the turn answers it once', async () => {
    const { t, fake, producer, out } = rig;
    const held = gate();
    fake.setHandler(async (request): Promise<FakeReply> => {
      if (tools(request) === 0) {
        await held.promise;
        return { toolCalls: [{ id: 'call_lookup', name: 'lookup', arguments: {} }] };
      }
      if (tools(request) === 1) return { toolCalls: [{ id: 'call_book', name: 'book', arguments: { slot: '9:30' } }] };
      return { content: `All set for: ${users(request.messages).join(' | ')}` };
    });
    const victim = await startWorker(true);
    await producer.submitInbound(inbound(1, 'book me the first free slot'));
    await fake.waitForRequest(() => true);
    await producer.submitInbound(inbound(2, 'make it for two people'));
    held.open();
    // The book call runs in the round after the steered message joined: kill the worker there.
    await rig.signal('book-started');
    await startWorker(false);
    victim.kill('SIGKILL');
    await once(victim, 'exit');

    await out.waitFor((replies) => replies.length >= 1);
    const keys = sessionKeys(SESSION, t.keyPrefix);
    await pollUntil(async () => (await t.redis.exists(keys.processing)) === 0 && (await t.redis.llen(keys.inbox)) === 0);
    expect(out.replies.map((reply) => reply.text)).toEqual(['All set for: book me the first free slot | make it for two people']);
    // The model saw the steered message at its second call, after the first round, and once in every later call.
    expect(users(fake.requests[1]!.messages)).toEqual(['book me the first free slot', 'make it for two people']);
    expect(fake.requests[1]!.messages.at(-2)?.role).toBe('tool');
    for (const request of fake.requests.slice(1)) expect(users(request.messages)).toEqual(['book me the first free slot', 'make it for two people']);
    // Nothing done before the crash was done again.
    expect(await t.redis.get(`${t.keyPrefix}runs:lookup`)).toBe('1');
    expect(await t.redis.lrange(`${t.keyPrefix}runs:book`, 0, -1)).toHaveLength(1);
    const transcriptUsers = (await readTranscript(t.redis, keys)).filter((e) => e.type === 'message' && e.message.role === 'user');
    expect(transcriptUsers.map((e) => (e.type === 'message' ? e.inboundId : ''))).toEqual(['web:s1:1', 'web:s1:2']);
  });

  it('a worker dying between the steer take and the append leaves the message where the retried turn takes it once', async () => {
    const { t, fake, producer, out } = rig;
    fake.setHandler((request) => ({ content: `Answered: ${users(request.messages).join(' | ')}` }));
    const keys = sessionKeys(SESSION, t.keyPrefix);
    await acceptInbound(t.redis, { sessionId: SESSION, message: inbound(1, 'first'), keyPrefix: t.keyPrefix, nowMs: Date.now() });
    // The dead worker's steps: the lease, the claim, one more message, the steer take — then nothing.
    const lease = (await holdLease(t.redis, keys, 60_000))!;
    expect((await claimInbox(t.redis, keys)).map((m) => m.id)).toEqual(['web:s1:1']);
    await acceptInbound(t.redis, { sessionId: SESSION, message: inbound(2, 'second'), keyPrefix: t.keyPrefix, nowMs: Date.now() });
    expect(await steerInbox(t.redis, keys, lease.fence + 1)).toBeNull();
    expect((await steerInbox(t.redis, keys, lease.fence))!.map((m) => m.id)).toEqual(['web:s1:2']);
    await lease.release();

    await rig.start();
    await producer.enqueueTurn(SESSION);
    await out.waitFor((replies) => replies.length >= 1);
    expect(out.replies.map((reply) => reply.text)).toEqual(['Answered: first | second']);
    const transcriptUsers = (await readTranscript(t.redis, keys)).filter((e) => e.type === 'message' && e.message.role === 'user');
    expect(transcriptUsers.map((e) => (e.type === 'message' ? e.inboundId : ''))).toEqual(['web:s1:1', 'web:s1:2']);
    expect(await t.redis.exists(keys.processing)).toBe(0);
  });

  it('keeps the reply named by the messages the turn started with, so it settles the live reply begun for them', async () => {
    const { fake, producer, out } = rig;
    const held = gate();
    fake.setHandler(async (request): Promise<FakeReply> => {
      if (tools(request) === 0) {
        await held.promise;
        return { toolCalls: [{ id: 'call_lookup', name: 'lookup', arguments: {} }] };
      }
      return { content: `Done for: ${users(request.messages).join(' | ')}` };
    });
    await rig.start({ liveReplies: true, tools: [] });
    await producer.submitInbound(inbound(1, 'first'));
    await fake.waitForRequest(() => true);
    await producer.submitInbound(inbound(2, 'second'));
    held.open();
    await out.waitFor((replies) => replies.length >= 1);
    expect(out.replies.map((reply) => [reply.id, reply.text])).toEqual([[replyJobId(['web:s1:1'], 'reply'), 'Done for: first | second']]);
  });
});
