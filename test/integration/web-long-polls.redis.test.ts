/**
 * Waiting web chat readers share Redis connections: 1,000 concurrent long polls against a private
 * redis-server with `maxclients 200` all get their reply, and the client count stays small.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import { pollUntil } from '../helpers/waits.js';

const POLLS = 1_000;
const PREFIX = 'cgtest-polls:';

let server: ChildProcess;
let port: number;
let redis: Redis;
let admin: Redis;

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port: found } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return found;
}

async function connected(url: string): Promise<Redis> {
  for (;;) {
    const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return client;
    } catch {
      client.disconnect();
      await once(server.stdout!, 'data'); // the server is still starting: wait for its next log line
    }
  }
}

/** `CLIENT LIST` lines, without the test's own admin connection. */
async function clientCount(): Promise<number> {
  const list = (await admin.client('LIST')) as string;
  return list.trim().split('\n').filter((line) => !line.includes('name=test-admin')).length;
}

beforeAll(async () => {
  port = await freePort();
  server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxclients', '200'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = `redis://127.0.0.1:${port}`;
  admin = await connected(url);
  await admin.client('SETNAME', 'test-admin');
  redis = new Redis(url, { maxRetriesPerRequest: 2 });
  redis.on('error', () => undefined); // the last test stops the server
});

afterAll(async () => {
  redis?.disconnect();
  admin?.disconnect();
  if (server && server.exitCode === null && server.signalCode === null) {
    server.kill('SIGKILL');
    await once(server, 'exit');
  }
});

describe('web chat long polls on Redis', () => {
  let web: WebChannel;

  it('answers 1,000 concurrent long polls with a server that allows 200 clients, on a handful of connections', async () => {
    web = createWebChannel({ redis, keyPrefix: PREFIX });
    await web.start(async () => undefined);
    const polls = Array.from({ length: POLLS }, (_, i) =>
      Promise.resolve(web.app.request(`/api/chat/c${i}/messages?after=0&timeoutMs=60000`)).then(async (res) => ({ status: res.status, body: (await res.json()) as { messages?: Array<{ text: string }> } })));
    let finishedEarly = false;
    void Promise.race(polls).then(() => (finishedEarly = true));
    // Every poll is waiting (or one failed early, as each used to when it opened its own connection).
    await pollUntil(() => finishedEarly || web.waitingReads() === POLLS);
    expect(finishedEarly).toBe(false);
    const waitingClients = await clientCount();
    expect(waitingClients).toBeLessThanOrEqual(5);

    for (let i = 0; i < POLLS; i++) await web.send({ chatId: `c${i}` }, { text: `reply ${i}`, mode: 'plain' });
    const results = await Promise.all(polls);
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(results.map((r) => r.body.messages?.map((m) => m.text))).toEqual(Array.from({ length: POLLS }, (_, i) => [`reply ${i}`]));
    expect(await clientCount()).toBeLessThanOrEqual(5);
    expect(web.waitingReads()).toBe(0);
    await web.stop();
  }, 60_000);

  it('answers 503 at once when Redis is down, rather than holding the poll', async () => {
    const exited = once(server, 'exit');
    server.kill('SIGKILL');
    await exited;
    const down = createWebChannel({ redis, keyPrefix: PREFIX });
    await down.start(async () => undefined);
    const res = await down.app.request('/api/chat/c1/messages?after=0&timeoutMs=60000');
    expect(res.status).toBe(503);
    await down.stop();
  });
});
