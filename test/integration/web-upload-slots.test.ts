/**
 * The web chat holds an upload's bytes in memory until it is answered, so it receives at most
 * `maxConcurrentUploads` at once: one more is refused (503 busy, Retry-After) before its body is
 * read, JSON posts are never held back, and a slot is free again once an upload is answered.
 */
import { once } from 'node:events';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { InboundMessage } from '../../src/core/inbound.js';

let channel: WebChannel;
let server: ServerType;
let port = 0;
let received: InboundMessage[];
/** Resolves when an upload's request has entered the channel (its slot taken), by file name order. */
let uploadsEntered: Array<() => void>;

beforeEach(async () => {
  received = [];
  channel = createWebChannel({}, { maxConcurrentUploads: 1 });
  await channel.start(async (message) => void received.push(message));
  uploadsEntered = [];
  const app = new Hono();
  app.post('/api/chat/:id/messages', async (c, next) => {
    const handled = next(); // runs synchronously up to reading the body, so the slot is taken now
    uploadsEntered.shift()?.();
    await handled;
  });
  app.route('/', channel.app);
  server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterEach(async () => {
  await channel.stop();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const BOUNDARY = 'cgboundary42';
const head = (name: string) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="clientMessageId"\r\n\r\n${name}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${name}.csv"\r\nContent-Type: text/csv\r\n\r\n`;
const tail = `a,b\r\n1,2\r\n--${BOUNDARY}--\r\n`;

/** A multipart post whose body is sent in two steps: the head now, the rest on `finish()`. */
function openUpload(name: string): { req: ClientRequest; answer: Promise<{ status: number; body: string; retryAfter?: string }>; finish: () => void } {
  const req = request({ host: '127.0.0.1', port, method: 'POST', path: `/api/chat/up1/messages`, headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, host: `127.0.0.1:${port}` } });
  const answer = new Promise<{ status: number; body: string; retryAfter?: string }>((resolve, reject) => {
    req.on('response', (res: IncomingMessage) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', reject);
  });
  req.write(head(name));
  return { req, answer, finish: () => req.end(tail) };
}

describe('web chat upload slots', () => {
  it('refuses a second upload while one is being received, takes JSON meanwhile, and frees the slot after the answer', async () => {
    const entered = new Promise<void>((resolve) => uploadsEntered.push(resolve));
    const first = openUpload('first');
    await entered;
    const json = await fetch(`http://127.0.0.1:${port}/api/chat/up1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hi', clientMessageId: 'j1' }) });
    expect(json.status).toBe(202);
    const second = openUpload('second');
    second.finish();
    const refused = await second.answer;
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toMatchObject({ refused: 'busy', error: 'this gateway is receiving 1 upload already; send the file again in a moment' });
    expect(refused.retryAfter).toBe('2');
    first.finish();
    expect((await first.answer).status).toBe(202);
    const third = openUpload('third');
    third.finish();
    expect((await third.answer).status).toBe(202);
    expect(received.map((m) => m.attachments?.[0]?.fileName ?? m.text)).toEqual(['hi', 'first.csv', 'third.csv']);
  });
});
