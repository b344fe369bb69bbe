/**
 * A turn waiting for approval survives its worker process: SIGKILL while it waits, then the
 * decision (pressed twice, as from two gateways) resumes it on another worker process, which runs
 * the approved call exactly once.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decideAndWake } from '../../src/approvals/decide.js';
import { createApprovalStore } from '../../src/approvals/store.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createSilentLogger } from '../../src/log.js';
import { sessionKeys } from '../../src/redis/keys.js';
import type { FakeRequest } from '../fakes/openai-server.js';
import { pollUntil } from '../helpers/waits.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const SESSION = 'web:k9';

describe('a turn waiting for approval', () => {
  let rig: WorkerRig;

  const startWorker = (): Promise<ChildProcess> => rig.spawnEffectWorker({ BOOK_APPROVAL: 'ask' });

  beforeEach(async () => { rig = await openWorkerRig(); });
  afterEach(async () => { await rig.close(); });

  it('holds no lease while it waits; after a SIGKILL of its worker, approving twice runs the call once on another worker', async () => {
    const { t, fake, producer, out } = rig;
    const hasTools = (r: FakeRequest) => r.messages.some((m) => m.role === 'tool');
    fake.setHandler((r) => (hasTools(r) ? { content: 'All set.' } : { toolCalls: [{ id: 'call_book', name: 'book', arguments: { slot: '9:30' } }] }));
    const victim = await startWorker();
    const message: InboundMessage = { id: 'web:k9:1', channel: 'web', chatId: 'k9', userId: 'u', userName: 'U', text: 'book 9:30', attachments: [], receivedAt: Date.now() };
    await producer.submitInbound(message);
    await out.waitFor((replies) => replies.length >= 1);
    const question = out.replies[0]!;
    expect(question.choices?.map((choice) => choice.label)).toEqual(['Approve', 'Always in this chat', 'Deny']);
    const id = /\(([a-z0-9]{6})\)/.exec(question.text)![1]!;
    const keys = sessionKeys(SESSION, t.keyPrefix);
    // The question is in the outbox before the job ends and gives the lease back: wait for that end.
    await pollUntil(async () => (await t.redis.exists(keys.lease)) === 0, { timeoutMs: 10_000, what: 'the lease released while the turn waits' });

    victim.kill('SIGKILL');
    await once(victim, 'exit');
    await startWorker();
    const store = createApprovalStore(t.redis, { keyPrefix: t.keyPrefix });
    const deps = { store, producer, logger: createSilentLogger() };
    const by = { userId: 'u', userName: 'U' };
    const [first, second] = await Promise.all([
      decideAndWake(deps, SESSION, id, { decision: 'approved', via: 'user', by }),
      decideAndWake(deps, SESSION, id, { decision: 'approved', via: 'user', by }),
    ]);
    expect([first.outcome, second.outcome].sort()).toEqual(['applied', 'decided']);

    await out.waitFor((replies) => replies.some((reply) => reply.text === 'All set.'));
    expect(await t.redis.lrange(`${t.keyPrefix}runs:book`, 0, -1)).toEqual([`${SESSION}:${message.id}:call_book`]);
    expect(fake.requests.filter((r) => !hasTools(r))).toHaveLength(1);
    expect(await t.redis.exists(keys.processing)).toBe(0);
  });
});
