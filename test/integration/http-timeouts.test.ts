/**
 * The HTTP server's time-outs (src/monitor/http-timeouts.ts) on raw sockets: a client that trickles
 * its headers, or an upload's body, byte by byte is answered 408 and cut — its upload slot freed —
 * while normal requests are served; an idle kept-alive connection is closed; an answer that takes
 * longer than the request time-out (a long poll) is not cut. Short time-outs; the assertions are on
 * what the server does, never on how long it took.
 */
import { connect, type Socket } from 'node:net';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import { closeServer, listen } from '../../src/gateway/http-server.js';
import type { ServerType } from '@hono/node-server';

const TIMEOUTS = { headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 300 };
const BOUNDARY = 'cgboundary7';

let channel: WebChannel;
let server: ServerType;
let port: number;
let baseUrl: string;
const sockets: Socket[] = [];
/** Resolves the long poll's answer. */
let answerLongPoll: () => void;

beforeEach(async () => {
  channel = createWebChannel({}, { maxConcurrentUploads: 2 });
  await channel.start(async () => undefined);
  const app = new Hono();
  const longPoll = new Promise<void>((resolve) => { answerLongPoll = resolve; });
  app.get('/test/long-poll', async (c) => {
    await longPoll;
    return c.text('answered');
  });
  app.get('/test/ping', (c) => c.text('pong'));
  app.route('/', channel.app);
  ({ server, httpUrl: baseUrl } = await listen(app, '127.0.0.1', 0, TIMEOUTS));
  port = Number(new URL(baseUrl).port);
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  answerLongPoll();
  await channel.stop();
  await closeServer(server);
});

/** A raw connection: `closed` resolves with everything the server sent once it closes the socket. */
function open(): { socket: Socket; closed: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  return { socket, closed };
}

/** Writes `text` now, then one more byte of `drip` every 50 ms until the server closes the socket. */
function trickle(text: string, drip: string): Promise<string> {
  const { socket, closed } = open();
  socket.write(text);
  let i = 0;
  const timer = setInterval(() => {
    if (!socket.destroyed && socket.writable) socket.write(drip[i++ % drip.length]!);
  }, 50);
  return closed.finally(() => clearInterval(timer));
}

const multipartHead = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="slow.txt"\r\nContent-Type: text/plain\r\n\r\n`;
const slowUpload = () => trickle(
  `POST /api/chat/slow/messages HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: 100000\r\n\r\n${multipartHead}`,
  'x',
);
const slowHeaders = () => trickle(`POST /api/chat/slow/messages HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `, 'abc');

function upload(name: string): Promise<Response> {
  const form = new FormData();
  form.set('clientMessageId', name);
  form.set('file', new Blob(['a,b\n1,2\n'], { type: 'text/csv' }), `${name}.csv`);
  return fetch(`${baseUrl}/api/chat/fast/messages`, { method: 'POST', body: form });
}

describe('HTTP server time-outs', () => {
  it('answers 408 and cuts clients trickling headers or an upload body, serving others meanwhile and freeing the upload slots', async () => {
    const longPoll = fetch(`${baseUrl}/test/long-poll`);
    const tricklers = [slowUpload(), slowUpload(), slowHeaders()];
    const json = await fetch(`${baseUrl}/api/chat/fast/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hi', clientMessageId: 'j1' }) });
    expect(json.status).toBe(202);
    const cut = await Promise.all(tricklers);
    for (const received of cut) expect(received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    // Both upload slots were held by the trickled uploads: free again, an upload is served.
    expect((await upload('after')).status).toBe(202);
    // An answer that took longer than the request time-out was not cut.
    answerLongPoll();
    const answered = await longPoll;
    expect([answered.status, await answered.text()]).toEqual([200, 'answered']);
  });

  it('closes a kept-alive connection left idle after its answer', async () => {
    expect(server).toMatchObject({ keepAliveTimeout: TIMEOUTS.keepAliveTimeoutMs, headersTimeout: TIMEOUTS.headersTimeoutMs, requestTimeout: TIMEOUTS.requestTimeoutMs });
    const { socket, closed } = open();
    socket.write(`GET /test/ping HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n\r\n`);
    const received = await closed;
    expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(received).toMatch(/\r\n\r\npong$/);
  });

  it('answers 408 and closes a connection that never sends a byte', async () => {
    const { closed } = open();
    expect(await closed).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  });
});
