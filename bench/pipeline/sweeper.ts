/**
 * The pending sweeper's capacity: the pending index as 30 s of 1,000 new sessions a second left it
 * (30,000 entries past the grace, 1% of them with a message still waiting), swept once, timed.
 * @returns sessions cleared from the index by the one sweep, its time, turns enqueued, entries left.
 */
import { startPendingSweeper } from '../../src/gateway/sweeper.js';
import { createSilentLogger } from '../../src/log.js';
import { createTurnProducer } from '../../src/queue/producer.js';
import type { RedisClient } from '../../src/redis/client.js';
import { pendingIndexKey, sessionKeys } from '../../src/redis/keys.js';

export async function runSweeperCapacity(redis: RedisClient, tag: string, sessions = 30_000): Promise<{ cleared: number; ms: number; left: number; enqueued: number }> {
  const keyPrefix = `${tag}-sweep:`;
  const producer = createTurnProducer({ redis }, { keyPrefix, queuePrefix: `{${tag}-sweepq}` });
  const index = pendingIndexKey(keyPrefix);
  for (let start = 0; start < sessions; start += 1000) {
    const members: Array<string | number> = [];
    for (let k = start; k < Math.min(sessions, start + 1000); k++) members.push(k, `web:s${k}`);
    await redis.zadd(index, ...members);
  }
  for (let k = 0; k < sessions; k += 100) await redis.rpush(sessionKeys(`web:s${k}`, keyPrefix).inbox, '{"id":"m"}');
  const sweeper = startPendingSweeper({ redis, producer, logger: createSilentLogger() }, { keyPrefix, sweepAtStart: false, intervalMs: 3_600_000, graceMs: 0 });
  const started = performance.now();
  const enqueued = await sweeper.run();
  const seconds = (performance.now() - started) / 1000;
  sweeper.stop();
  const left = await redis.zcard(index);
  await producer.close();
  return { cleared: sessions - left, ms: seconds * 1000, left, enqueued };
}
