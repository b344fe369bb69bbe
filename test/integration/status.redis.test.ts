/**
 * `chatgate status`, `/readyz` and `doctor --json` against a real gateway (in this process) and a
 * real worker process (`chatgate worker`), on real Redis, with a fake OpenAI endpoint: a gateway
 * without workers is not ready; a live worker is listed with its heartbeat; a SIGKILLed worker's
 * heartbeat expires and it is named as dead; queue depths and failed counts are those BullMQ and
 * `chatgate failed` show.
 */
import type { ChildProcess } from 'node:child_process';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayOptions } from '../../src/cli/compose.js';
import { readerFor } from '../../src/cli/sessions.js';
import type { StatusReport } from '../../src/cli/status-report.js';
import { loadConfig } from '../../src/config.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import { createSilentLogger } from '../../src/log.js';
import { readHeartbeats } from '../../src/redis/heartbeats.js';
import { sessionIndexKey, sessionKeys } from '../../src/redis/keys.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { runChatgate } from '../helpers/cli-process.js';
import { spawnCliWorker, startModelsFront } from '../helpers/cli-worker.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

/** Short heartbeats, so a killed worker's expires within the test. */
const HEARTBEAT_TTL_MS = '1500';

/** `chatgate …args` with `env` (nothing inherited but PATH and HOME; no ./.env). */
const runCli = runChatgate;

/** Checks `condition` every 100 ms until it holds (the test's timeout bounds the wait). */
async function pollUntil(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 100));
}

describe('chatgate status, /readyz and doctor --json', () => {
  let t: TestRedis;
  let llm: FakeOpenAI;
  let front: { baseURL: string; close(): Promise<void> };
  let gateway: GatewayHandle;
  let worker: ChildProcess | undefined;
  let env: Record<string, string>;
  const status = async () => {
    const result = await runCli(['status', '--json'], env);
    return { ...result, report: JSON.parse(result.stdout) as StatusReport };
  };
  const check = (report: { checks: Array<{ name: string; status: string; detail: string }> }, name: string) => report.checks.find((c) => c.name === name)!;
  const liveWorkers = async () => (await readHeartbeats(t.redis, { keyPrefix: t.keyPrefix })).processes.filter((beat) => beat.role === 'worker' && beat.alive);

  beforeAll(async () => {
    t = createTestRedis();
    llm = await startFakeOpenAI(() => ({ content: 'hello from the model' }));
    front = await startModelsFront(llm.baseURL);
    env = {
      REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, OPENAI_BASE_URL: front.baseURL, OPENAI_API_KEY: 'test-key',
      CHATGATE_MODEL: 'gpt-4o-mini', CHATGATE_CONTEXT_WINDOW: '16000', CHATGATE_HTTP_PORT: '0', CHATGATE_HEARTBEAT_TTL_MS: HEARTBEAT_TTL_MS,
    };
    const config = loadConfig(env);
    gateway = await startGateway({ redis: t.redis, logger: createSilentLogger(), sessions: readerFor(config, { redis: t.redis }) }, gatewayOptions(config));
  });

  afterAll(async () => {
    worker?.kill('SIGKILL');
    await gateway.close();
    await front.close();
    await llm.close();
    await t.cleanup();
  });

  it('nothing running: DOWN for the gateway and the workers, each with what to start; exit 1', async () => {
    const empty = { ...env, CHATGATE_KEY_PREFIX: `${t.keyPrefix}none:`, CHATGATE_QUEUE_PREFIX: `${t.queuePrefix}none` };
    const text = await runCli(['status'], empty);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^DOWN {2}gateway {3}no gateway is running: no message is received or delivered\n {16}fix: start it: `chatgate gateway`/m);
    expect(text.stdout).toMatch(/^DOWN {2}workers {3}no worker is alive: messages wait in the queue\n {16}fix: start one with `chatgate worker`/m);
    expect(text.stdout).toMatch(/^skip {2}channels {2}no gateway is running$/m);
    expect(text.stdout).toMatch(/^ok {4}llm {7}no model call yet; http:\/\/127\.0\.0\.1:\d+\/v1 answers/m);
    expect(text.stdout).toMatch(/^DOWN: gateway, workers — see the fix lines above\.$/m);
    expect(text.stderr).toContain('chatgate: looking for Redis…');
  });

  it('a gateway without workers: /readyz 503 saying why, status DOWN for workers (exit 1), doctor --json FAIL for workers', async () => {
    const ready = await fetch(`${gateway.httpUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: Record<string, string> }).checks.workers).toMatch(/^no worker is alive: messages wait in the queue; start one with `chatgate worker`/);
    const [{ code, report }, doctor] = await Promise.all([status(), runCli(['doctor', '--json'], env)]);
    expect(code).toBe(1);
    expect(report.ok).toBe(false);
    expect(check(report, 'gateway')).toMatchObject({ status: 'ok', detail: expect.stringContaining(gateway.httpUrl) });
    expect(check(report, 'channels')).toMatchObject({ status: 'ok', detail: 'web connected' });
    expect(check(report, 'workers')).toMatchObject({ status: 'down', fix: expect.stringContaining('chatgate worker') });
    expect(doctor.code).toBe(1);
    const verdicts = JSON.parse(doctor.stdout) as { ok: boolean; checks: Array<{ name: string; status: string; detail: string }> };
    expect(verdicts.ok).toBe(false);
    expect(check(verdicts, 'workers')).toMatchObject({ status: 'FAIL', detail: expect.stringMatching(/a gateway runs .* but no worker is alive/) });
    expect(check(verdicts, 'llm').status).toBe('ok');
  });

  it('a live worker: /readyz 200; status lists its host, pid and version, counts its turn and the model\'s answer; exit 0', async () => {
    worker = await spawnCliWorker({ redisUrl: t.url, keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, baseURL: front.baseURL, env: { CHATGATE_HEARTBEAT_TTL_MS: HEARTBEAT_TTL_MS } });
    expect((await fetch(`${gateway.httpUrl}/readyz`)).status).toBe(200);
    const posted = await fetch(`${gateway.httpUrl}/api/chat/st1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hi', clientMessageId: 'm1', userId: 'u1' }) });
    expect(posted.status).toBeLessThan(300);
    await pollUntil(async () => (await liveWorkers()).some((beat) => beat.worker?.turnsDone === 1));
    const [{ code, report, stdout }, doctorRun] = await Promise.all([status(), runCli(['doctor', '--json'], env)]);
    expect(code, stdout).toBe(0);
    const beat = report.processes.find((p) => p.role === 'worker' && p.pid === worker!.pid);
    expect(beat).toMatchObject({ alive: true, version: expect.stringMatching(/^\d+\.\d+\.\d+/), worker: { turnsDone: 1, turnsFailed: 0, llm: { model: 'gpt-4o-mini', demo: false }, lastModelCall: { outcome: 'ok' } } });
    expect(check(report, 'workers')).toMatchObject({ status: 'ok', detail: expect.stringContaining(`pid ${worker.pid}`) });
    expect(check(report, 'workers').detail).toContain('1 turn done, 0 failed');
    expect(check(report, 'llm')).toMatchObject({ status: 'ok', detail: expect.stringContaining('was answered') });
    const doctor = JSON.parse(doctorRun.stdout) as { checks: Array<{ name: string; status: string; detail: string }> };
    expect(check(doctor, 'workers')).toMatchObject({ status: 'ok', detail: expect.stringContaining(`pid ${worker.pid}`) });
  });

  it('a killed worker: its heartbeat expires, /readyz is 503 again, status names it dead and exits 1 with what to do', async () => {
    const pid = worker!.pid!;
    worker!.kill('SIGKILL');
    await pollUntil(async () => (await liveWorkers()).length === 0);
    expect((await fetch(`${gateway.httpUrl}/readyz`)).status).toBe(503);
    const [text, { report }] = await Promise.all([runCli(['status'], env), status()]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(new RegExp(`^DOWN  workers   no worker is alive: messages wait in the queue; dead: \\S+ pid ${pid} \\(last heard of \\d+ s ago\\)$`, 'm'));
    expect(text.stdout).toMatch(/^ {16}fix: start one with `chatgate worker`/m);
    expect(text.stdout).toMatch(/^DOWN: workers — see the fix lines above\.$/m);
    expect(report.processes.find((p) => p.pid === pid)).toMatchObject({ role: 'worker', alive: false });
  });

  it('queue depths are BullMQ\'s counts and failed messages are what `chatgate failed` lists', async () => {
    const seed = async (id: string, texts: string[]) => {
      const keys = sessionKeys(id, t.keyPrefix);
      for (const [k, text] of texts.entries()) await t.redis.rpush(keys.failed, JSON.stringify({ id: `${id}:${k}`, channel: 'web', chatId: id, userId: 'u', userName: 'U', text, attachments: [], receivedAt: Date.now() }));
      await t.redis.hset(keys.meta, 'version', '1', 'lastActivityMs', String(Date.now()));
      await t.redis.zadd(sessionIndexKey(t.keyPrefix), Date.now(), id);
    };
    await seed('web:fa', ['one', 'two', 'three']);
    await seed('web:fb', ['{"text":"imitating a message"}']);
    const turns = new Queue('turns', { connection: t.redis, prefix: t.queuePrefix });
    await turns.add('turn', { sessionId: 'web:later' }, { delay: 3_600_000, jobId: 'later' });
    const counts = await turns.getJobCounts('waiting', 'delayed', 'failed');
    await turns.close();
    const [{ report }, ...listed] = await Promise.all([
      status(), ...['web:fa', 'web:fb'].map(async (id) => (JSON.parse((await runCli(['failed', id, '--json'], env)).stdout) as unknown[]).length),
    ]);
    expect(report.failed.messages).toBe(listed[0]! + listed[1]!);
    expect(report.failed.sessions).toEqual([{ id: 'web:fa', count: listed[0] }, { id: 'web:fb', count: listed[1] }]);
    expect(report.queues.turns).toMatchObject({ waiting: counts.waiting, delayed: counts.delayed, failed: counts.failed });
    expect(report.queues.turns!.delayed).toBe(1);
    expect(check(report, 'failed')).toMatchObject({ status: 'warn', detail: expect.stringMatching(/^4 failed messages in 2 sessions: web:fa \(3\), web:fb \(1\)/) });
    expect(check(report, 'queues').detail).toContain('turns: 0 waiting, 0 active, 1 delayed');
  });
});
