/**
 * `chatgate status` says when an active turn belongs to a dead worker: the workers line warns and
 * names the dead worker with its turns being recovered; `--json` lists them in `deadWorkerTurns`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { buildStatusReport } from '../../src/cli/status-report.js';
import { loadConfig } from '../../src/config.js';
import { heartbeatKeys } from '../../src/redis/keys.js';
import { writeHeartbeat, type HeartbeatRecord } from '../../src/redis/heartbeats.js';
import { recordWorkerTurn } from '../../src/redis/worker-turns.js';
import { createTestRedis } from '../helpers/redis.js';

describe('chatgate status with a dead worker holding a turn', () => {
  const t = createTestRedis();
  afterAll(() => t.cleanup());

  it('warns on the workers line and lists the turns in deadWorkerTurns', async () => {
    const beat = (id: string, pid: number): HeartbeatRecord => ({
      role: 'worker', id, host: 'box', pid, startedAt: Date.now() - 60_000, version: '0.1.0', beatAt: Date.now(), ttlMs: 60_000, budgetDigest: 'off',
      worker: { queue: 'turns', concurrency: 4, llm: { model: 'chatgate-demo', summaryModel: 'chatgate-demo', contextWindow: 8192, demo: true }, turnsDone: 0, turnsFailed: 0 },
    });
    await writeHeartbeat(t.redis, beat('box:100:aaaaaa', 100), t.keyPrefix);
    await writeHeartbeat(t.redis, beat('box:200:bbbbbb', 200), t.keyPrefix);
    // Worker 200 died: its live key is gone, its last beat stays.
    await t.redis.del(heartbeatKeys(t.keyPrefix).live('worker:box:200:bbbbbb'));
    await recordWorkerTurn(t.redis, 'box:200:bbbbbb', { sessionId: 'web:x', jobId: '7', lockToken: 'tok', fence: 3 }, t.keyPrefix);

    const config = loadConfig({ REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, CHATGATE_DEMO: 'true' });
    const report = await buildStatusReport(config, t.redis);
    const workers = report.checks.find((c) => c.name === 'workers')!;
    expect(workers.status).toBe('warn');
    expect(workers.detail).toMatch(/dead: box pid 200 \(last heard of .*; 1 active turn of it being recovered\)/);
    expect(report.deadWorkerTurns).toEqual([{ worker: 'box:200:bbbbbb', host: 'box', pid: 200, turns: 1, sessions: ['web:x'] }]);
  });
});
