/**
 * A decision is stored before its event enters the session's inbox (src/approvals/decide.ts). A turn
 * job that runs in between (another message's) leaves the parked turn waiting: the turn resumes with
 * the decision's event, so its answer names the message that decided (an `/approve` request waits for it).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decisionEvent } from '../../src/approvals/decide.js';
import { createApprovalStore } from '../../src/approvals/store.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { sessionKeys } from '../../src/redis/keys.js';
import type { FakeRequest } from '../fakes/openai-server.js';
import { pollUntil } from '../helpers/waits.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const SESSION = 'web:k7';

describe('a decision on its way to the inbox', () => {
  let rig: WorkerRig;

  beforeEach(async () => { rig = await openWorkerRig(); });
  afterEach(async () => { await rig.close(); });

  it('is waited for: the resumed turn takes its event and answers the message that decided', async () => {
    const { t, fake, producer, out } = rig;
    const hasTools = (r: FakeRequest) => r.messages.some((m) => m.role === 'tool');
    fake.setHandler((r) => (hasTools(r) ? { content: 'All set.' } : { toolCalls: [{ id: 'call_book', name: 'book', arguments: { slot: '9:30' } }] }));
    await rig.spawnEffectWorker({ BOOK_APPROVAL: 'ask' });
    const message = (id: string, text: string): InboundMessage => ({ id, channel: 'web', chatId: 'k7', userId: 'u', userName: 'U', text, attachments: [], receivedAt: Date.now() });
    await producer.submitInbound(message('web:k7:1', 'book 9:30'));
    await out.waitFor((replies) => replies.length >= 1);
    const id = /\(([a-z0-9]{6})\)/.exec(out.replies[0]!.text)![1]!;
    const keys = sessionKeys(SESSION, t.keyPrefix);
    await pollUntil(async () => (await t.redis.exists(keys.lease)) === 0, { timeoutMs: 10_000, what: 'the lease released while the turn waits' });

    // Decided, its event not submitted yet; another message's turn job runs meanwhile.
    const store = createApprovalStore(t.redis, { keyPrefix: t.keyPrefix });
    const decided = await store.decide(SESSION, id, { decision: 'approved', via: 'user', by: { userId: 'u', userName: 'U' } });
    await producer.submitInbound(message('web:k7:2', 'and a coffee'));
    await rig.turnsDrained();
    expect(await t.redis.llen(keys.inbox)).toBe(1);
    expect(out.replies.map((reply) => reply.text)).not.toContain('All set.');

    await producer.submitInbound(decisionEvent((decided as { record: Parameters<typeof decisionEvent>[0] }).record, 'web:k7:3'));
    await out.waitFor((replies) => replies.some((reply) => reply.text === 'All set.'));
    expect(out.replies.find((reply) => reply.text === 'All set.')!.answers).toEqual(expect.arrayContaining(['web:k7:2', `approval:${id}`, 'web:k7:3']));
  });
});
