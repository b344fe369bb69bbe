/**
 * The one-script ingest on a throw-away Redis Cluster (test/helpers/redis-cluster.ts): the script
 * touches only the session's slot, the rate counters (per sender, spanning its chats) and the
 * pending index are kept in their own slots, and the verdicts are those of a single node.
 */
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createRedisCluster } from '../../src/redis/client.js';
import { acceptInbound } from '../../src/redis/ingest.js';
import { pendingIndexKey, rateLimitKey, seenKey, sessionKeys } from '../../src/redis/keys.js';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.js';

const PREFIX = 'cgingest:';
const NOW = Date.UTC(2026, 0, 1, 12, 0, 10);
let cluster: TestCluster;
let redis: Cluster;

beforeAll(async () => {
  cluster = await startTestCluster();
  redis = createRedisCluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
});

afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

let seq = 0;
function message(chat: string, user: string, text = 'hello'): InboundMessage {
  seq++;
  return { id: `web:${chat}:${seq}`, channel: 'web', chatId: chat, userId: user, userName: 'Ada', text, attachments: [], receivedAt: NOW };
}

function accept(m: InboundMessage, options: { limit?: number; tooLong?: boolean } = {}) {
  const keys = [rateLimitKey('web', m.userId, 9, PREFIX), rateLimitKey('web', 'addr:10.1.1.1', 9, PREFIX)];
  return acceptInbound(redis, {
    sessionId: `web:${m.chatId}`, message: m, keyPrefix: PREFIX, dedupeTtlSeconds: 600, nowMs: NOW,
    rate: { keys, limit: options.limit ?? 100, ttlSeconds: 120 }, tooLong: options.tooLong ?? false,
  });
}

describe('the ingest script on a Redis Cluster', () => {
  it('spreads the keys it is given over several slots (the test means something)', async () => {
    const slots = await Promise.all([sessionKeys('web:c1', PREFIX).inbox, pendingIndexKey(PREFIX), rateLimitKey('web', 'u1', 9, PREFIX)].map((key) => redis.cluster('KEYSLOT', key)));
    expect(new Set(slots).size).toBe(3);
  });

  it('accepts with the pending mark and the figures, and drops the re-delivery', async () => {
    const m = message('c1', 'u1');
    const result = await accept(m);
    expect(result).toMatchObject({ kind: 'accepted', figures: { historyLength: 0, meta: {} } });
    expect(await redis.lrange(sessionKeys('web:c1', PREFIX).inbox, 0, -1)).toEqual([JSON.stringify(m)]);
    expect(await redis.zscore(pendingIndexKey(PREFIX), 'web:c1')).toBe(String(NOW));
    expect(await redis.exists(seenKey('web:c1', m.id, PREFIX))).toBe(1);
    expect(await accept(m)).toEqual({ kind: 'duplicate', inboxLength: 1 });
    expect(await redis.get(rateLimitKey('web', 'u1', 9, PREFIX))).toBe('1');
  });

  it('holds one sender to its limit across its chats, and refuses a long message after counting it', async () => {
    expect((await accept(message('c2', 'u2'), { limit: 2 })).kind).toBe('accepted');
    expect((await accept(message('c3', 'u2'), { limit: 2 })).kind).toBe('rate_limited'); // the address counted c1's message too
    expect(await redis.llen(sessionKeys('web:c3', PREFIX).inbox)).toBe(0);
    const long = message('c4', 'u4', 'long');
    expect(await accept(long, { tooLong: true })).toEqual({ kind: 'too_long' });
    expect([await redis.llen(sessionKeys('web:c4', PREFIX).inbox), await redis.exists(seenKey('web:c4', long.id, PREFIX)), await redis.get(rateLimitKey('web', 'u4', 9, PREFIX))]).toEqual([0, 0, '1']);
  });
});
