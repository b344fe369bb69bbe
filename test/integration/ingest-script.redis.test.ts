/**
 * The one accept (src/redis/ingest.ts over src/redis/scripts/ingest-inbound-7.lua): a
 * re-delivery is dropped without counting, each refusal writes nothing but its counters, an
 * accepted message gets its seen marker, inbox entry and pending mark in the same step, and the
 * reply carries the hygiene pre-check's figures. Through the ingest pipeline, a plain message
 * costs one command on the ingest connection and one `add`. Real Redis, own prefixes.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createIngest } from '../../src/gateway/ingest.js';
import { startPendingSweeper } from '../../src/gateway/sweeper.js';
import { createSilentLogger } from '../../src/log.js';
import { resolveQueueNames } from '../../src/queue/names.js';
import { openOutboundQueue } from '../../src/outbound/outbound-queue.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import type { HygieneFigures } from '../../src/redis/hygiene-figures.js';
import { acceptInbound } from '../../src/redis/ingest.js';
import { pendingIndexKey, rateLimitKey, seenKey, sessionKeys } from '../../src/redis/keys.js';
import type { SessionOps } from '../../src/session/session-ops.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 10);
let t: TestRedis;

beforeEach(() => { t = createTestRedis(); });
afterEach(async () => { await t.cleanup(); });

let seq = 0;
function message(text: string, user = '42'): InboundMessage {
  seq++;
  return { id: `web:${user}:${seq}`, channel: 'web', chatId: user, userId: user, userName: 'Ada', text, attachments: [], receivedAt: NOW };
}

function accept(m: InboundMessage, extra: { limit?: number; address?: string; tooLong?: boolean; sessionId?: string } = {}) {
  const keys = [rateLimitKey('web', m.userId, 7, t.keyPrefix), ...(extra.address ? [rateLimitKey('web', `addr:${extra.address}`, 7, t.keyPrefix)] : [])];
  return acceptInbound(t.redis, {
    sessionId: extra.sessionId ?? `web:${m.chatId}`, message: m, keyPrefix: t.keyPrefix, dedupeTtlSeconds: 3600, nowMs: NOW,
    rate: extra.limit ? { keys, limit: extra.limit, ttlSeconds: 120 } : null, tooLong: extra.tooLong ?? false,
  });
}

const inbox = (sessionId: string) => t.redis.lrange(sessionKeys(sessionId, t.keyPrefix).inbox, 0, -1);
const pending = (sessionId: string) => t.redis.zscore(pendingIndexKey(t.keyPrefix), sessionId);
const counter = (sender: string) => t.redis.get(rateLimitKey('web', sender, 7, t.keyPrefix));

describe('the ingest script', () => {
  it('accepts: seen marker, inbox entry and pending mark in one step, and the hygiene figures with them', async () => {
    const keys = sessionKeys('web:42', t.keyPrefix);
    await t.redis.hset(keys.meta, 'lastPromptTokens', '1200', 'appendedTokensSince', '30', 'limits', '{"model":"m"}');
    await t.redis.rpush(keys.history, 'a', 'b', 'c');
    const m = message('hello');
    const result = await accept(m, { limit: 5 });
    const stored = await inbox('web:42');
    expect(stored.map((raw) => JSON.parse(raw) as InboundMessage)).toEqual([m]);
    expect(result).toEqual({ kind: 'accepted', figures: { historyLength: 3, inboxBytes: Buffer.byteLength(stored[0]!), meta: { lastPromptTokens: '1200', appendedTokensSince: '30', limits: '{"model":"m"}' } } });
    expect(await pending('web:42')).toBe(String(NOW));
    expect(await t.redis.get(seenKey('web:42', m.id, t.keyPrefix))).toBe(String(NOW));
    expect(await t.redis.ttl(seenKey('web:42', m.id, t.keyPrefix))).toBeGreaterThan(3500);
    expect(await counter('42')).toBe('1');
  });

  it('leaves a message whose turn was never added (the gateway died) to the pending sweeper', async () => {
    expect((await accept(message('stranded'))).kind).toBe('accepted');
    const names = resolveQueueNames({ queuePrefix: t.queuePrefix });
    const producer = createTurnProducer({ redis: t.redis }, { ...names, keyPrefix: t.keyPrefix });
    const sweeper = startPendingSweeper({ redis: t.redis, producer, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, sweepAtStart: false, now: () => NOW + 60_000 });
    try {
      expect(await sweeper.run()).toBe(1);
      const turns = new Queue(names.turnQueue, { connection: t.redis, prefix: names.queuePrefix });
      expect((await turns.getJobs(['waiting'])).map((job) => job.data)).toEqual([{ sessionId: 'web:42' }]);
      await turns.close();
    } finally {
      sweeper.stop();
      await producer.close();
    }
  });

  it('drops a re-delivery without appending or counting it, and tells how many messages wait', async () => {
    const m = message('once');
    expect((await accept(m, { limit: 5 })).kind).toBe('accepted');
    expect(await accept(m, { limit: 5 })).toEqual({ kind: 'duplicate', inboxLength: 1 });
    expect(await inbox('web:42')).toHaveLength(1);
    expect(await counter('42')).toBe('1');
  });

  it('refuses over the limit per sender and per address, writing only the counters', async () => {
    expect((await accept(message('one', 'u1'), { limit: 2, address: '10.0.0.1' })).kind).toBe('accepted');
    expect((await accept(message('two', 'u1'), { limit: 2, address: '10.0.0.1' })).kind).toBe('accepted');
    expect(await accept(message('three', 'u1'), { limit: 2, address: '10.0.0.1' })).toEqual({ kind: 'rate_limited' });
    // Another user from the same address: its own counter is fresh, the address's is over.
    const other = message('from a fresh id', 'u2');
    expect(await accept(other, { limit: 2, address: '10.0.0.1' })).toEqual({ kind: 'rate_limited' });
    expect([await counter('u1'), await counter('u2'), await counter('addr:10.0.0.1')]).toEqual(['3', '1', '4']);
    expect(await inbox('web:u2')).toEqual([]);
    expect(await pending('web:u2')).toBeNull();
    expect(await t.redis.exists(seenKey('web:u2', other.id, t.keyPrefix))).toBe(0);
  });

  it('refuses a message too long after counting it, and writes nothing else', async () => {
    const m = message('long');
    expect(await accept(m, { limit: 5, tooLong: true })).toEqual({ kind: 'too_long' });
    expect(await counter('42')).toBe('1');
    expect([await inbox('web:42'), await pending('web:42'), await t.redis.exists(seenKey('web:42', m.id, t.keyPrefix))]).toEqual([[], null, 0]);
  });

  it('stores half an emoji well-formed, so the claim script can decode it', async () => {
    expect((await accept(message('cut \uD83D'))).kind).toBe('accepted');
    expect((JSON.parse((await inbox('web:42'))[0]!) as InboundMessage).text).toBe('cut \uFFFD');
  });

  it('rejects invalid options and writes nothing', async () => {
    const m = message('bad');
    await expect(acceptInbound(t.redis, { sessionId: 'web:42', message: m, keyPrefix: t.keyPrefix, dedupeTtlSeconds: 0, nowMs: NOW, rate: null, tooLong: false })).rejects.toThrow(/ttlSeconds/);
    expect([await inbox('web:42'), await pending('web:42')]).toEqual([[], null]);
  });
});

describe('the ingest pipeline on the one script', () => {
  it('takes a plain message with one command on its connection and one add, and hands the figures to hygiene', async () => {
    const logger = createSilentLogger();
    const names = resolveQueueNames({ queuePrefix: t.queuePrefix });
    const producerRedis = t.redis.duplicate();
    const producer = createTurnProducer({ redis: producerRedis }, { ...names, keyPrefix: t.keyPrefix });
    const outbound = openOutboundQueue(t.redis, names);
    const seen: Array<HygieneFigures | undefined> = [];
    const ops = { hygiene: async (_id: string, figures?: HygieneFigures) => { seen.push(figures); return null; } } as unknown as SessionOps;
    const ingestRedis = t.redis.duplicate();
    const ingest = createIngest({ redis: ingestRedis, producer, ops, outbound, logger, now: () => NOW, commands: { view: {} as never, turnPosition: async () => ({ state: 'none' }) } }, {
      keyPrefix: t.keyPrefix, allow: { telegram: '*', discord: '*', web: '*', api: '*' }, rateLimitPerMinute: 10, maxMessageChars: 100, groupMode: 'per-chat',
    });
    try {
      expect(await ingest.handle({ ...message('warm-up'), clientAddress: '10.0.0.9' })).toBe('accepted'); // scripts loaded, connections ready
      await ingest.idle();
      const sent = { ingest: countCommands(ingestRedis), producer: countCommands(producerRedis) };
      expect(await ingest.handle({ ...message('counted'), clientAddress: '10.0.0.9' })).toBe('accepted');
      await ingest.idle();
      expect(sent.ingest).toEqual(['evalsha']);
      expect(sent.producer).toEqual(['evalsha']);
      expect(seen).toHaveLength(2);
      expect(seen[1]).toMatchObject({ historyLength: 0, meta: {} });
      expect(seen[1]!.inboxBytes).toBeGreaterThan(seen[0]!.inboxBytes);
      const jobs = await new Queue(names.turnQueue, { connection: t.redis, prefix: names.queuePrefix }).getJobs(['waiting']);
      expect(jobs.map((job) => job.data)).toEqual([{ sessionId: 'web:42' }]);
    } finally {
      await producer.close();
      ingestRedis.disconnect();
      producerRedis.disconnect();
    }
  });
});

/** The names of the commands `redis` sends from now on. */
function countCommands(redis: Redis): string[] {
  const names: string[] = [];
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
    names.push(command.name);
    return (send as (...args: unknown[]) => unknown)(command, ...rest);
  }) as typeof redis.sendCommand;
  return names;
}
