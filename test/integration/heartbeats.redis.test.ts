/**
 * Heartbeats on real Redis: a beat is alive for its TTL and then dead (its live key expired), a
 * clean stop removes it, a dead one is forgotten after `forgetAfterMs`, and a worker's beat counts
 * the turns and the last model call it is told of through the metrics port.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createSilentLogger } from '../../src/log.js';
import { createMemoryMetrics } from '../../src/metrics.js';
import { describeForeignBeats, HEARTBEAT_FORMAT, readHeartbeats, removeHeartbeat, startHeartbeat, writeHeartbeat, type HeartbeatRecord } from '../../src/redis/heartbeats.js';
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
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes.map((b) => [b.id, b.alive]).sort()).toEqual([['long', true], ['short', true]]);
    await pollUntil(async () => (await t.redis.exists(heartbeatKeys(t.keyPrefix).live('worker:short'))) === 0);
    const after = (await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes;
    expect(after.find((b) => b.id === 'short')).toMatchObject({ alive: false, host: 'h' });
    await removeHeartbeat(t.redis, { role: 'worker', id: 'long' }, t.keyPrefix);
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes.map((b) => b.id)).toEqual(['short']);
  });

  it('forgets a dead process after forgetAfterMs, and drops an entry that is not a heartbeat', async () => {
    t = createTestRedis();
    await writeHeartbeat(t.redis, record('old', { ttlMs: 1000, beatAt: 1_000 }), t.keyPrefix);
    await t.redis.del(heartbeatKeys(t.keyPrefix).live('worker:old'));
    await t.redis.hset(heartbeatKeys(t.keyPrefix).seen, 'worker:junk', 'not json');
    expect(await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix, forgetAfterMs: 60_000 })).toEqual({ processes: [], foreign: [] });
    expect(await t.redis.hlen(heartbeatKeys(t.keyPrefix).seen)).toBe(0);
  });

  it('a started heartbeat renews itself every third of its TTL and stops cleanly', async () => {
    t = createTestRedis();
    const beat = await startHeartbeat({ redis: t.redis, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, current: () => record('renewed', { ttlMs: 300, beatAt: Date.now() }) });
    const first = (await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes[0]!.beatAt;
    await pollUntil(async () => ((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes[0]?.beatAt ?? 0) > first);
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes[0]).toMatchObject({ id: 'renewed', alive: true });
    await beat.stop();
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes).toEqual([]);
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
    await pollUntil(async () => (await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes[0]?.worker?.turnsFailed === 1);
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes[0]).toMatchObject({
      role: 'worker', alive: true, version: '1.2.3', pid: process.pid,
      worker: { queue: 'turns', concurrency: 2, llm: { model: 'm', summaryModel: 'm', contextWindow: 8192, baseUrl: 'http://user:***@127.0.0.1:9/v1', demo: false }, turnsDone: 1, turnsFailed: 1, lastModelCall: { outcome: 'auth', at: expect.any(Number) } },
    });
    await heartbeat.stop();
    await writeHeartbeat(t.redis, { ...record('x'), worker: undefined }, t.keyPrefix); // readers tolerate a beat without figures
    expect((await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes.map((b) => b.id)).toEqual(['x']);
  });

  it('names a live beat of another format version (its key and format) beside the beats it reads, and keeps it', async () => {
    t = createTestRedis();
    const keys = heartbeatKeys(t.keyPrefix);
    await writeHeartbeat(t.redis, record('mine'), t.keyPrefix);
    for (const [member, format] of [['worker:old:1:aaaaaa', 1], ['gateway:old:2:bbbbbb', 1], ['worker:new:3:cccccc', HEARTBEAT_FORMAT + 1], ['worker:bare:4:dddddd', undefined], ['worker:gone:5:eeeeee', 1]] as const) {
      await t.redis.hset(keys.seen, member, JSON.stringify({ ...record('other'), format }));
      // A process of another version beats its live key as this one does; the last one stopped beating.
      if (member !== 'worker:gone:5:eeeeee') await t.redis.set(keys.live(member), '1', 'PX', 60_000);
    }
    const read = await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix });
    expect(read.processes.map((b) => [b.id, b.alive])).toEqual([['mine', true]]);
    expect(read.foreign).toEqual([
      { member: 'gateway:old:2:bbbbbb', format: 1 },
      { member: 'worker:bare:4:dddddd' },
      { member: 'worker:new:3:cccccc', format: HEARTBEAT_FORMAT + 1 },
      { member: 'worker:old:1:aaaaaa', format: 1 },
    ]);
    expect(describeForeignBeats(read.foreign)).toBe(`2 processes beat heartbeat format 1 (another chatgate version): gateway:old:2:bbbbbb, worker:old:1:aaaaaa; 1 process beats heartbeat format none (another chatgate version): worker:bare:4:dddddd; 1 process beats heartbeat format ${HEARTBEAT_FORMAT + 1} (another chatgate version): worker:new:3:cccccc; they are not shown: upgrade or stop them`);
    expect(describeForeignBeats(read.foreign.slice(3))).toBe('1 process beats heartbeat format 1 (another chatgate version): worker:old:1:aaaaaa; it is not shown: upgrade or stop it');
    // Another version's records are its own: kept, the dead one too (its readers forget it).
    expect(await t.redis.hlen(keys.seen)).toBe(6);
  });
});
