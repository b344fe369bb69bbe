/**
 * Heartbeats on real Redis: a beat is alive for its TTL and then dead (its live key expired), a
 * clean stop removes it, a dead one is forgotten after `forgetAfterMs`, and a worker's beat counts
 * the turns and the last model call it is told of through the metrics port.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createSilentLogger } from '../../src/log.js';
import { createMemoryMetrics } from '../../src/metrics.js';
import { StoredFormatError } from '../../src/errors.js';
import { HEARTBEAT_FORMAT, readHeartbeats, removeHeartbeat, startHeartbeat, writeHeartbeat, type HeartbeatRecord } from '../../src/redis/heartbeats.js';
import { heartbeatKeys } from '../../src/redis/keys.js';
import { createWorkerHeartbeat } from '../../workers/heartbeat.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const record = (id: string, overrides: Partial<HeartbeatRecord> = {}): HeartbeatRecord => ({
  role: 'worker', id, host: 'h', pid: 1, startedAt: Date.now(), version: '0.0.0', beatAt: Date.now(), ttlMs: 60_000, budgetDigest: 'off', ...overrides,
});

async function pollUntil(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 50));
}

describe('heartbeats', () => {
  let t: TestRedis;
  afterEach(async () => t.cleanup());

  it('is alive for its TTL, then dead; a clean stop removes it', async () => {
    t = createTestRedis();
    await writeHeartbeat(t.redis, record('short', { ttlMs: 200 }), t.keyPrefix);
    await writeHeartbeat(t.redis, record('long'), t.keyPrefix);
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).map((b) => [b.id, b.alive]).sort()).toEqual([['long', true], ['short', true]]);
    await pollUntil(async () => (await t.redis.exists(heartbeatKeys(t.keyPrefix).live('worker:short'))) === 0);
    const after = await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix });
    expect(after.find((b) => b.id === 'short')).toMatchObject({ alive: false, host: 'h' });
    await removeHeartbeat(t.redis, { role: 'worker', id: 'long' }, t.keyPrefix);
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).map((b) => b.id)).toEqual(['short']);
  });

  it('forgets a dead process after forgetAfterMs, and drops an entry that is not a heartbeat', async () => {
    t = createTestRedis();
    await writeHeartbeat(t.redis, record('old', { ttlMs: 1000, beatAt: 1_000 }), t.keyPrefix);
    await t.redis.del(heartbeatKeys(t.keyPrefix).live('worker:old'));
    await t.redis.hset(heartbeatKeys(t.keyPrefix).seen, 'worker:junk', 'not json');
    expect(await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix, forgetAfterMs: 60_000 })).toEqual([]);
    expect(await t.redis.hlen(heartbeatKeys(t.keyPrefix).seen)).toBe(0);
  });

  it('a started heartbeat renews itself every third of its TTL and stops cleanly', async () => {
    t = createTestRedis();
    const beat = await startHeartbeat({ redis: t.redis, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, current: () => record('renewed', { ttlMs: 300, beatAt: Date.now() }) });
    const first = (await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix }))[0]!.beatAt;
    await pollUntil(async () => ((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix }))[0]?.beatAt ?? 0) > first);
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix }))[0]).toMatchObject({ id: 'renewed', alive: true });
    await beat.stop();
    expect(await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).toEqual([]);
  });

  it('a worker\'s beat counts turns and its last model call from the metrics events, and passes them on', async () => {
    t = createTestRedis();
    const inner = createMemoryMetrics();
    const heartbeat = createWorkerHeartbeat({ redis: t.redis, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, ttlMs: 300, queue: 'turns', concurrency: 2, llm: { model: 'm', summaryModel: 'm', contextWindow: 8192, baseUrl: 'http://user:secret@127.0.0.1:9/v1', demo: false }, version: '1.2.3' });
    const metrics = heartbeat.observe(inner);
    await heartbeat.start();
    metrics.record({ type: 'model_call', channel: 'web', outcome: 'ok' });
    metrics.record({ type: 'turn', channel: 'web', outcome: 'ok', durationMs: 5 });
    metrics.record({ type: 'model_call', channel: 'web', outcome: 'auth' });
    metrics.record({ type: 'turn', channel: 'web', outcome: 'error', durationMs: 5 });
    expect(inner.events).toHaveLength(4);
    await pollUntil(async () => (await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix }))[0]?.worker?.turnsFailed === 1);
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix }))[0]).toMatchObject({
      role: 'worker', alive: true, version: '1.2.3', pid: process.pid,
      worker: { queue: 'turns', concurrency: 2, llm: { model: 'm', summaryModel: 'm', contextWindow: 8192, baseUrl: 'http://user:***@127.0.0.1:9/v1', demo: false }, turnsDone: 1, turnsFailed: 1, lastModelCall: { outcome: 'auth', at: expect.any(Number) } },
    });
    await heartbeat.stop();
    await writeHeartbeat(t.redis, { ...record('x'), worker: undefined }, t.keyPrefix); // readers tolerate a beat without figures
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).map((b) => b.id)).toEqual(['x']);
  });

  it('refuses a stored beat of another format version, naming it, what it found and what to do, and keeps it', async () => {
    t = createTestRedis();
    const keys = heartbeatKeys(t.keyPrefix);
    for (const [format, found] of [[undefined, 'none'], [1, '1'], [HEARTBEAT_FORMAT + 1, String(HEARTBEAT_FORMAT + 1)]] as const) {
      await t.redis.hset(keys.seen, 'worker:other', JSON.stringify({ ...record('other'), format }));
      const read = readHeartbeats(t.redis, { keyPrefix: t.keyPrefix });
      await expect(read).rejects.toThrow(StoredFormatError);
      await expect(read).rejects.toThrow(`the heartbeat of worker:other has format version ${found}; this chatgate reads version ${HEARTBEAT_FORMAT}: a process of another chatgate version beats on this Redis under the same key prefix: run one chatgate version per key prefix`);
      expect(await t.redis.hexists(keys.seen, 'worker:other')).toBe(1);
    }
  });
});
