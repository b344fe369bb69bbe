/**
 * `chatgate status`, `doctor` and `budgets list` while a process of another chatgate version beats
 * on the same key prefix (a rolling upgrade): each lists what it can read and names the other
 * process, its heartbeat key and format, and what to do; none fails whole.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { StatusReport } from '../../src/cli/status-report.js';
import { HEARTBEAT_FORMAT, writeHeartbeat, type HeartbeatRecord } from '../../src/redis/heartbeats.js';
import { heartbeatKeys } from '../../src/redis/keys.js';
import { runChatgate } from '../helpers/cli-process.js';
import { readChannelsPanel } from '../../src/gateway/channel-health.js';
import { checkLiveWorkers } from '../../src/gateway/heartbeat.js';
import { startWorkerWatch } from '../../src/gateway/worker-watch.js';
import { createSilentLogger } from '../../src/log.js';
import { resolveQueueNames, type TurnJobData } from '../../src/queue/names.js';
import { openShardedQueue } from '../../src/queue/sharded.js';
import { startDeadWorkerRecovery } from '../../workers/dead-workers.js';
import { createTestRedis } from '../helpers/redis.js';

const FOREIGN = '1 process beats heartbeat format 1 (another chatgate version): worker:old:1:ffffff; it is not shown: upgrade or stop it';

describe('status, doctor and budgets list beside a process of another chatgate version', () => {
  const t = createTestRedis();
  const env = { ...t.env, CHATGATE_DEMO: 'true', CHATGATE_LOG_LEVEL: 'warn' };
  afterAll(() => t.cleanup());

  it('list the processes they can read and name the other one with what to do', { timeout: 60_000 }, async () => {
    const beat: HeartbeatRecord = {
      role: 'worker', id: 'box:100:aaaaaa', host: 'box', pid: 100, startedAt: Date.now() - 60_000, version: '0.1.0', beatAt: Date.now(), ttlMs: 60_000, budgetDigest: 'off',
      worker: { queue: 'turns', concurrency: 4, llm: { model: 'chatgate-demo', summaryModel: 'chatgate-demo', contextWindow: 8192, demo: true }, turnsDone: 3, turnsFailed: 0 },
    };
    await writeHeartbeat(t.redis, beat, t.keyPrefix);
    // An old worker, still running: its beat is of format 1.
    const keys = heartbeatKeys(t.keyPrefix);
    await t.redis.hset(keys.seen, 'worker:old:1:ffffff', JSON.stringify({ format: HEARTBEAT_FORMAT - 1, role: 'worker', id: 'old:1:ffffff', beatAt: Date.now() }));
    await t.redis.set(keys.live('worker:old:1:ffffff'), '1', 'PX', 60_000);

    const status = await runChatgate(['status'], env);
    expect(status.stdout).toMatch(/^ok {4}workers {3}1 alive: box pid 100 \(v0\.1\.0, up .*\), 3 turns done, 0 failed$/m);
    expect(status.stdout).toContain(`warn  versions  ${FOREIGN}\n                fix: run one chatgate version per key prefix (this one beats heartbeat format ${HEARTBEAT_FORMAT})`);
    const json = JSON.parse((await runChatgate(['status', '--json'], env)).stdout) as StatusReport;
    expect(json.processes.map((p) => p.id)).toEqual(['box:100:aaaaaa']);
    expect(json.foreignBeats).toEqual([{ member: 'worker:old:1:ffffff', format: 1 }]);

    const doctor = JSON.parse((await runChatgate(['doctor', '--json'], env)).stdout) as { checks: Array<{ name: string; status: string; detail: string }> };
    expect(doctor.checks.find((c) => c.name === 'redis')).toMatchObject({ status: 'ok' });
    expect(doctor.checks.find((c) => c.name === 'workers')).toMatchObject({ status: 'ok', detail: '1 alive (box pid 100)' });
    expect(doctor.checks.find((c) => c.name === 'versions')).toMatchObject({ status: 'FAIL', detail: FOREIGN });

    const listed = await runChatgate(['budgets', 'list', '--json'], env);
    expect(listed.code).toBe(0);
    expect(listed.stderr.trimEnd()).toBe(`chatgate budgets: warning: the budget settings of another chatgate version are unknown: ${FOREIGN}`);
    expect(JSON.parse(listed.stdout)).toMatchObject({ settings: { live: [{ role: 'worker', id: 'box:100:aaaaaa', budgetDigest: 'off' }] } });
  });

  it('the readers of the running processes read past it: readiness, the channels panel, the worker watch, the dead-worker recovery', async () => {
    // The beats of the test above: a live worker of this version, one of format 1.
    const logger = createSilentLogger();
    await expect(checkLiveWorkers(t.redis, t.keyPrefix)).resolves.toBeUndefined();
    await expect(readChannelsPanel(t.redis, t.keyPrefix)).resolves.toMatchObject({ rows: [] });
    const watch = startWorkerWatch({ redis: t.redis, logger }, { keyPrefix: t.keyPrefix, intervalMs: 0 });
    await expect(watch.run()).resolves.toBeUndefined();
    watch.stop();
    const names = resolveQueueNames({ queuePrefix: t.queuePrefix, queueShards: t.queueShards });
    const queue = openShardedQueue<TurnJobData>(names.turnQueue, names, t.redis);
    const recovery = startDeadWorkerRecovery({ redis: t.redis, logger, queue }, { keyPrefix: t.keyPrefix, selfId: 'me', intervalMs: 0 });
    await expect(recovery.run()).resolves.toBe(0);
    recovery.stop();
    await queue.close();
  });
});
