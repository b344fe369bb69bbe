import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { LlmError } from '../../src/errors.js';
import { createLlmClient } from '../../src/llm/client.js';
import { createHttpFetch } from '../../src/llm/http-fetch.js';

const MODEL = 'gpt-4o-mini';
const ANSWER = { id: 'c1', object: 'chat.completion', created: 0, model: MODEL, choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'hi' } }] };

describe('llm http fetch', () => {
  let server: Server | undefined;
  const serve = async (handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<string> => {
    server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (part: Buffer) => parts.push(part));
      req.on('end', () => handler(req, res, Buffer.concat(parts).toString('utf8')));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  afterEach(async () => {
    server?.closeAllConnections();
    if (server) await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  });

  it('sends the method, headers and body with its length, and gives status, headers and body back', async () => {
    const seen: Array<{ method?: string; type?: string; length?: string; body: string }> = [];
    const base = await serve((req, res, body) => {
      seen.push({ method: req.method, type: req.headers['content-type'], length: req.headers['content-length'], body });
      res.writeHead(201, { 'x-request-id': 'req-1', 'content-type': 'application/json' }).end('{"ok":true}');
    });
    const response = await createHttpFetch()(`${base}/v1/x`, { method: 'POST', headers: new Headers({ 'content-type': 'application/json' }), body: '{"é":1}' });
    expect(seen).toEqual([{ method: 'POST', type: 'application/json', length: String(Buffer.byteLength('{"é":1}')), body: '{"é":1}' }]);
    expect([response.status, response.ok, response.headers.get('x-request-id'), response.url]).toEqual([201, true, 'req-1', `${base}/v1/x`]);
    expect(await response.json()).toEqual({ ok: true });
    expect(response.bodyUsed).toBe(true);
    await expect(response.text()).rejects.toThrow(/already been read/);
  });

  it('decompresses a gzip body as fetch does', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(JSON.stringify(ANSWER)));
    });
    const result = await createLlmClient({ baseURL: `${base}/v1`, model: MODEL, stream: false }).complete({ messages: [{ role: 'user', content: 'hello' }] });
    expect(result.message.content).toBe('hi');
  });

  it('aborts a body being read: the reader fails with an AbortError', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {}\n\n'); // and never ends
    });
    const controller = new AbortController();
    const response = await createHttpFetch()(`${base}/v1/x`, { method: 'POST', body: '{}', signal: controller.signal });
    const chunks = response.body as unknown as AsyncIterable<Buffer>;
    const read = (async () => {
      for await (const chunk of chunks) if (chunk.length > 0) controller.abort();
    })();
    await expect(read).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('a refused connection is a connection failure of the call, retried and then thrown', async () => {
    const base = await serve(() => undefined);
    server!.close();
    await once(server!, 'close');
    server = undefined;
    const llm = createLlmClient({ baseURL: `${base}/v1`, model: MODEL, retry: { baseDelayMs: 1, maxRetries: 1 } });
    const error = await llm.complete({ messages: [{ role: 'user', content: 'hello' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ kind: 'connection' });
  });

  it('an endpoint that never answers is a timeout of the call', async () => {
    const base = await serve(() => undefined);
    const llm = createLlmClient({ baseURL: `${base}/v1`, model: MODEL, timeoutMs: 50, retry: { maxRetries: 0 } });
    const error = await llm.complete({ messages: [{ role: 'user', content: 'hello' }] }).catch((err: unknown) => err);
    expect(error).toMatchObject({ kind: 'connection', message: expect.stringMatching(/timed out/) });
  });
});
