import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMonitorApp, MemorySessionView } from '../../src/monitor/index.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const PREFIX = `cgtest-${randomUUID().slice(0, 8)}`;
const TOKEN = 'monitor-token-0123456789';

describe('monitor with BullMQ queues', () => {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const queue = new Queue('turns', { connection: { url: REDIS_URL }, prefix: PREFIX });
  let server: ServerType;
  let base: string;

  beforeAll(async () => {
    await queue.add('turn', { sessionId: 'web:abc' }, { jobId: 'web-abc-1' });
    const app = createMonitorApp({ sessions: new MemorySessionView(), queues: [queue] }, { host: '0.0.0.0', monitorToken: TOKEN });
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '0.0.0.0' }, () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    const closed = new Promise((resolve) => server.close(resolve));
    (server as Server).closeAllConnections();
    await closed;
    await queue.close();
    const keys = await redis.keys(`${PREFIX}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('counts queue depth by state from the queues', async () => {
    const res = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(await res.text()).toMatch(/^chatgate_queue_jobs\{queue="turns",state="waiting"\} 1$/m);
  });

  it('serves bull-board at /admin/queues behind the token, with its assets and API', async () => {
    expect((await fetch(`${base}/admin/queues`)).status).toBe(401);
    const login = await fetch(`${base}/admin/queues?token=${TOKEN}`, { redirect: 'manual' });
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/admin/queues');
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0];
    const page = await fetch(`${base}/admin/queues`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('chatgate queues');
    const asset = html.match(/src="([^"]+\.js)"/)?.[1];
    expect(asset).toBeDefined();
    const assetRes = await fetch(new URL(asset as string, `${base}/admin/queues/`), { headers: { cookie } });
    expect(assetRes.status).toBe(200);
    const api = await fetch(`${base}/admin/queues/api/queues?activeQueue=turns&status=waiting&page=1`, { headers: { cookie } });
    expect(api.status).toBe(200);
    const body = (await api.json()) as { queues: { name: string; counts: Record<string, number> }[] };
    expect(body.queues.map((q) => q.name)).toEqual(['turns']);
    expect(body.queues[0].counts.waiting).toBe(1);
  });

  it('refuses a forged write: a cross-origin text/plain POST with the cookie adds no job; a same-origin JSON one does', async () => {
    const login = await fetch(`${base}/admin/queues?token=${TOKEN}`, { redirect: 'manual' });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const add = `${base}/admin/queues/api/queues/turns/add`;
    const body = JSON.stringify({ name: 'forged', data: { sessionId: 'web:victim' } });
    const before = await queue.getJobCountByTypes('waiting');
    const forged: Array<Record<string, string>> = [
      { 'content-type': 'text/plain', origin: 'http://127.0.0.1:9999', 'sec-fetch-site': 'same-site' },
      { 'content-type': 'text/plain', origin: 'http://127.0.0.1:9999' },
      { 'content-type': 'text/plain' }, // no browser headers: still not JSON
      { 'content-type': 'application/x-www-form-urlencoded' },
    ];
    for (const headers of forged) {
      const res = await fetch(add, { method: 'POST', headers: { cookie, ...headers }, body });
      expect(res.status, JSON.stringify(headers)).toBe(headers.origin ? 403 : 415);
    }
    expect(await queue.getJobCountByTypes('waiting')).toBe(before);
    const ok = await fetch(add, { method: 'POST', headers: { cookie, 'content-type': 'application/json', origin: base, 'sec-fetch-site': 'same-origin' }, body });
    expect(ok.status).toBe(200);
    expect(await queue.getJobCountByTypes('waiting')).toBe(before + 1);
  });
});
