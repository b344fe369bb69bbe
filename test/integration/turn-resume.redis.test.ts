import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import type { FakeRequest } from '../fakes/openai-server.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const SESSION = 'web:r1';

describe('a crashed turn resumes', () => {
  let rig: WorkerRig;

  const startWorker = (block: boolean): Promise<ChildProcess> => rig.spawnEffectWorker({ EFFECT_BLOCK: block ? '1' : '0' });

  beforeEach(async () => { rig = await openWorkerRig(); });
  afterEach(async () => { await rig.close(); });

  it('after a SIGKILL between a side-effecting tool call and the next model call: the tool ran once, nothing done is done again', async () => {
    const { t, fake, producer, out } = rig;
    const hasTools = (r: FakeRequest) => r.messages.some((m) => m.role === 'tool');
    fake.setHandler((r) => (hasTools(r)
      ? { content: 'All set.' }
      : { toolCalls: [{ id: 'call_lookup', name: 'lookup', arguments: {} }, { id: 'call_book', name: 'book', arguments: { slot: '9:30' } }] }));
    const victim = await startWorker(true);
    const message: InboundMessage = { id: 'web:r1:1', channel: 'web', chatId: 'r1', userId: 'u', userName: 'U', text: 'book me the first free slot', attachments: [], receivedAt: Date.now() };
    await producer.submitInbound(message);
    await rig.signal('book-started');
    await startWorker(false);
    victim.kill('SIGKILL');
    await once(victim, 'exit');

    await out.waitFor((replies) => replies.length >= 1);
    expect(out.replies.map((reply) => reply.text)).toEqual(['All set.']);
    // The side effect happened once, with the key of that call.
    expect(await t.redis.lrange(`${t.keyPrefix}runs:book`, 0, -1)).toEqual([`${SESSION}:${message.id}:call_book`]);
    // Nothing completed before the crash was done again: not the model's first answer, not the lookup.
    expect(fake.requests.filter((r) => !hasTools(r))).toHaveLength(1);
    expect(await t.redis.get(`${t.keyPrefix}runs:lookup`)).toBe('1');
    const last = fake.requests[fake.requests.length - 1]!;
    const results = last.messages.filter((m) => m.role === 'tool');
    expect(results.map(messageText)[0]).toBe('free: 9:30');
    expect(messageText(results[1]!)).toMatch(/outcome of this book call is unknown/);
    const keys = sessionKeys(SESSION, t.keyPrefix);
    const assistant = (await readTranscript(t.redis, keys)).filter((e) => e.type === 'message' && e.message.role === 'assistant');
    expect(assistant).toHaveLength(2);
    expect(await t.redis.exists(keys.processing)).toBe(0);
  });
});
