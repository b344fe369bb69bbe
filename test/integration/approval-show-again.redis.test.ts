/**
 * A question decided where no channel could show it (`chatgate reset` cancels it from the CLI) is
 * shown when it is decided again: by a press on its stale buttons (test/e2e/approvals-reset-telegram.redis.test.ts)
 * or, when nobody presses, by a gateway's expiry look at it once its time is up.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startApprovalExpiry } from '../../src/approvals/expiry.js';
import { createApprovalStore } from '../../src/approvals/store.js';
import type { ApprovalRecord } from '../../src/core/approval.js';
import { denyPending } from '../../src/gateway/approval-commands.js';
import { createSilentLogger } from '../../src/log.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import { createTestRedis } from '../helpers/redis.js';

const t = createTestRedis();
const producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, ...t.names });
afterAll(async () => {
  await producer.close();
  await t.cleanup();
});

describe('a question cancelled without a channel', () => {
  it('is shown (decided, its buttons closed) by the expiry once its time is up', async () => {
    const askedAtMs = Date.now();
    const record: ApprovalRecord = {
      v: 1, id: 'abc234', sessionId: 'telegram:42', turnId: 'telegram:42:1', callId: 'call_1', tool: 'write_file', args: '{}',
      route: { channel: 'telegram', chatId: '42' }, askedBy: { userId: '7', userName: 'Ada' }, chatType: 'private',
      askedAtMs, expiresAtMs: askedAtMs + 60_000, state: 'pending', version: 1,
    };
    const store = createApprovalStore(t.redis, { keyPrefix: t.keyPrefix });
    await store.create(record);
    // The CLI's reset: the store and the wake-up, no channel to show it.
    expect(await denyPending({ store, producer, logger: createSilentLogger() }, record.sessionId, 'reset')).toBe(1);

    const shown: ApprovalRecord[] = [];
    const expiry = startApprovalExpiry({ store, producer, logger: createSilentLogger(), showDecision: async (decided) => void shown.push(decided) }, { intervalMs: 0, now: () => record.expiresAtMs });
    try {
      expect(await expiry.run()).toBe(0);
    } finally {
      expiry.stop();
    }
    expect(shown).toMatchObject([{ id: 'abc234', state: 'denied', decidedVia: 'reset' }]);
    // Looked at once: the expiry index forgets it.
    expect(await store.due(record.expiresAtMs, 10)).toEqual([]);
  });
});
