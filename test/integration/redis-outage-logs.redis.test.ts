/**
 * A Redis outage does not flood the log: while Redis is gone, every web chat message the gateway
 * is handed fails (503), yet each component says "Redis unavailable" once (a warning, the repeats
 * at debug), nothing else is logged at warn or error, and when Redis is back each of them says so
 * in one line. Runs its own redis-server, killed and started again by the test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayOptions } from '../../src/cli/compose.js';
import { loadConfig } from '../../src/config.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import { MemorySessionView } from '../../src/monitor/index.js';
import { REDIS_OUTAGE_WARNING_INTERVAL_MS } from '../../src/log.js';
import { watchConnection } from '../../src/redis/client.js';
import { closedPort } from '../helpers/cli-process.js';
import { createLogSink } from '../helpers/log-sink.js';

/** Messages posted while Redis is gone: the log must not grow with them. */
const MESSAGES_IN_OUTAGE = 12;
const WARN = 40;

async function startRedisServer(port: number, dir: string): Promise<ChildProcess> {
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'ignore'] });
  for await (const chunk of server.stdout!) if (/ready to accept connections/i.test(String(chunk))) break;
  server.stdout!.resume();
  return server;
}

describe('the log during a Redis outage', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-outage-logs-'));
  const sink = createLogSink('debug');
  let port: number;
  let server: ChildProcess;
  let redis: Redis;
  let gateway: GatewayHandle;

  beforeAll(async () => {
    port = await closedPort();
    server = await startRedisServer(port, dir);
    redis = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: null });
    watchConnection(redis, sink.logger.child({ component: 'redis' }), 'redis connection error'); // as the CLI does
    const config = loadConfig({ REDIS_URL: `redis://127.0.0.1:${port}`, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', CHATGATE_MODEL: 'fake-model', CHATGATE_CONTEXT_WINDOW: '16000', CHATGATE_HTTP_PORT: '0' });
    gateway = await startGateway({ redis, logger: sink.logger, sessions: new MemorySessionView([]) }, gatewayOptions(config));
  });
  afterAll(async () => {
    // Not awaited: a close after an outage may wait on connections still backing off.
    void gateway?.close().catch(() => undefined);
    redis?.disconnect();
    if (server?.exitCode === null) server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const post = (id: string) => fetch(`${gateway.httpUrl}/api/chat/c1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'anyone there?', clientMessageId: id }),
  });

  it('says "Redis unavailable" once per component, whatever the traffic, and once that it is back', async () => {
    expect((await post('before')).status).toBe(202);
    // Its hygiene check and turn job run in the background: done before Redis goes, so the first
    // warning of the ingest is about a message of the outage.
    await gateway.ingest.idle();
    const from = sink.lines.length;
    server.kill('SIGKILL');
    await once(server, 'exit');
    for (let k = 0; k < MESSAGES_IN_OUTAGE; k++) expect((await post(`gone-${k}`)).status).toBe(503);
    const loud = sink.lines.slice(from).filter((line) => line.level >= WARN);
    expect(loud.map((line) => line.msg)).toEqual(loud.map(() => 'Redis unavailable'));
    // One warning per component per interval: on a loaded machine the outage may outlast one.
    for (const component of new Set(loud.map((line) => String(line.component)))) {
      const times = loud.filter((line) => String(line.component) === component).map((line) => (typeof line.time === 'number' ? line.time : Date.parse(String(line.time))));
      expect(times.every(Number.isFinite), component).toBe(true);
      const gaps = times.slice(1).map((time, k) => time - times[k]!);
      expect(gaps.filter((gap) => gap < REDIS_OUTAGE_WARNING_INTERVAL_MS), component).toEqual([]);
    }
    expect(loud.find((line) => line.component === 'ingest')).toMatchObject({ during: 'inbound message not handled', failures: 1 });
    // The repeats are kept at debug, as they were.
    expect(sink.lines.slice(from).filter((line) => line.component === 'ingest' && line.msg === 'inbound message not handled')).toHaveLength(MESSAGES_IN_OUTAGE - 1);

    server = await startRedisServer(port, dir);
    let status = 0;
    for (let k = 0; k < 100 && status !== 202; k++) status = (await post(`back-${k}`)).status;
    expect(status).toBe(202);
    const back = sink.lines.slice(from).filter((line) => line.msg === 'Redis available again');
    expect(back.filter((line) => line.component === 'ingest')).toHaveLength(1);
    expect(back.filter((line) => line.component === 'ingest')[0]).toMatchObject({ level: 30, outageMs: expect.any(Number) });
  });
});
