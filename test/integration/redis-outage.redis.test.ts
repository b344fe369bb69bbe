/**
 * A Redis outage is answered at once: `/readyz` and the web chat API say 503 within a second
 * (not after the client's reconnect attempts or a hung command), whether Redis hangs (SIGSTOP) or
 * is gone. Runs its own redis-server, stopped and killed by the test.
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
import { createSilentLogger } from '../../src/log.js';
import { MemorySessionView } from '../../src/monitor/index.js';
import { closedPort } from '../helpers/cli-process.js';

/** The answer must come within this bound: fetch gives up after it. */
const ANSWER_WITHIN_MS = 1000;

describe('gateway during a Redis outage', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cg-outage-'));
  let server: ChildProcess;
  let redis: Redis;
  let gateway: GatewayHandle;

  beforeAll(async () => {
    const port = await closedPort();
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''], { stdio: ['ignore', 'pipe', 'ignore'] });
    for await (const chunk of server.stdout!) if (/ready to accept connections/i.test(String(chunk))) break;
    server.stdout!.resume();
    redis = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: null });
    redis.on('error', () => undefined);
    const config = loadConfig({ REDIS_URL: `redis://127.0.0.1:${port}`, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', CHATGATE_MODEL: 'fake-model', CHATGATE_CONTEXT_WINDOW: '16000', CHATGATE_HTTP_PORT: '0' });
    gateway = await startGateway({ redis, logger: createSilentLogger(), sessions: new MemorySessionView([]) }, gatewayOptions(config));
  });
  afterAll(async () => {
    // Redis stays down: the gateway's close cannot finish its Redis steps, so it is not awaited.
    void gateway?.close().catch(() => undefined);
    redis?.disconnect();
    if (server.exitCode === null) server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const post = (id: string) => fetch(`${gateway.httpUrl}/api/chat/c1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'anyone there?', clientMessageId: id }),
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  });

  it('answers /readyz and a web chat post with 503 at once while Redis hangs, and recovers', async () => {
    server.kill('SIGSTOP');
    try {
      const ready = await fetch(`${gateway.httpUrl}/readyz`, { signal: AbortSignal.timeout(ANSWER_WITHIN_MS) });
      expect(ready.status).toBe(503);
      expect((await post('hung-1')).status).toBe(503);
    } finally {
      server.kill('SIGCONT');
    }
    expect((await post('hung-2')).status).toBe(202);
  });

  it('answers /readyz and a web chat post with 503 at once when Redis is gone', async () => {
    expect((await fetch(`${gateway.httpUrl}/readyz`)).status).toBe(503); // no worker yet, but Redis answers
    expect(await (await fetch(`${gateway.httpUrl}/readyz`)).json()).toMatchObject({ checks: { redis: 'ok' } });
    server.kill('SIGKILL');
    await once(server, 'exit');

    const ready = await fetch(`${gateway.httpUrl}/readyz`, { signal: AbortSignal.timeout(ANSWER_WITHIN_MS) });
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ checks: { redis: expect.not.stringMatching(/^ok$/) } });
    expect((await post('gone-1')).status).toBe(503);
  });
});
