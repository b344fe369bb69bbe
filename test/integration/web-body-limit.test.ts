/**
 * The web chat's body limit over a real HTTP server (@hono/node-server, as the gateway serves it):
 * a post that declares its length is judged by Content-Length, a chunked one by the bytes it
 * sends; both refuse an over-limit body with 413 and take one within the limit.
 */
import { once } from 'node:events';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWebChannel, type WebChannel } from '../../channels/web/index.js';
import type { InboundMessage } from '../../src/core/inbound.js';

const MAX_BODY = 1024;
let channel: WebChannel;
let server: ServerType;
let port = 0;
let received: InboundMessage[];

beforeEach(async () => {
  received = [];
  channel = createWebChannel({}, { maxBodyBytes: MAX_BODY });
  await channel.start(async (message) => void received.push(message));
  server = serve({ fetch: channel.app.fetch, port: 0, hostname: '127.0.0.1' });
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterEach(async () => {
  await channel.stop();
  await new Promise((resolve) => server.close(resolve));
});

/** Posts `body` as JSON, with a Content-Length or chunked; resolves with the status and the parsed answer. */
async function post(body: string, framing: 'length' | 'chunked'): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string | number> = { 'content-type': 'application/json', host: `127.0.0.1:${port}` };
  if (framing === 'length') headers['content-length'] = Buffer.byteLength(body);
  const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/api/chat/conv-1/messages', headers });
  if (framing === 'chunked') for (let at = 0; at < body.length; at += 200) req.write(body.slice(at, at + 200));
  else req.write(body);
  req.end();
  const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
  let text = '';
  for await (const chunk of res) text += String(chunk);
  return { status: res.statusCode ?? 0, json: JSON.parse(text) as Record<string, unknown> };
}

describe('web chat body limit over HTTP', () => {
  it.each(['length', 'chunked'] as const)('with %s framing: 413 over the limit, 202 within it', async (framing) => {
    const over = await post(JSON.stringify({ text: 'x'.repeat(MAX_BODY) }), framing);
    expect(over.status).toBe(413);
    expect(over.json.error).toBe(`body over ${MAX_BODY} bytes`);
    const within = await post(JSON.stringify({ text: 'hello', clientMessageId: `m-${framing}` }), framing);
    expect(within.status).toBe(202);
    expect(received.map((m) => m.text)).toEqual(['hello']);
  });
});
