import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { LlmError } from '../../src/errors.js';
import { createLlmClient } from '../../src/llm/client.js';
import { createHttpFetch } from '../../src/llm/http-fetch.js';

const MODEL = 'gpt-4o-mini';
const ASK = { messages: [{ role: 'user' as const, content: 'hello' }] };
const ANSWER = { id: 'c1', object: 'chat.completion', created: 0, model: MODEL, choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'hi' } }] };
const ANSWER_JSON = JSON.stringify(ANSWER);

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

  it('a body that stops after the headers fails once the socket idled past the body timeout', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"id":'); // and never more
    });
    const response = await createHttpFetch({ idleTimeoutMs: 50 })(`${base}/v1/x`, { method: 'POST', body: '{}' });
    await expect(response.text()).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    const llm = createLlmClient({ baseURL: `${base}/v1`, model: MODEL, stream: false, timeoutMs: 50, retry: { maxRetries: 0 } });
    await expect(llm.complete(ASK)).rejects.toMatchObject({ kind: 'connection' });
  });

  it('a body cut off mid-way (content-length) is a connection failure of the call', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(ANSWER_JSON.length) });
      res.write(ANSWER_JSON.slice(0, 10));
      setImmediate(() => res.socket?.destroy());
    });
    const llm = createLlmClient({ baseURL: `${base}/v1`, model: MODEL, stream: false, retry: { maxRetries: 0 } });
    await expect(llm.complete(ASK)).rejects.toMatchObject({ kind: 'connection' });
  });

  it('a chunked body cut off mid-way is a connection failure of the call', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(ANSWER_JSON.slice(0, 10));
      setImmediate(() => res.socket?.destroy());
    });
    const llm = createLlmClient({ baseURL: `${base}/v1`, model: MODEL, stream: false, retry: { maxRetries: 0 } });
    await expect(llm.complete(ASK)).rejects.toMatchObject({ kind: 'connection' });
  });

  it('reads chunked and content-length bodies alike, and skips 1xx interim answers', async () => {
    let count = 0;
    const base = await serve((_req, res) => {
      if (++count === 1) return void res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(ANSWER_JSON.length) }).end(ANSWER_JSON);
      res.writeEarlyHints({ link: '</x>; rel=preload' });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(ANSWER_JSON.slice(0, 20));
      res.end(ANSWER_JSON.slice(20));
    });
    const llm = createLlmClient({ baseURL: `${base}/v1`, model: MODEL, stream: false });
    expect((await llm.complete(ASK)).message.content).toBe('hi');
    expect((await llm.complete(ASK)).message.content).toBe('hi');
  });

  it('gives a 204 with an empty body; a 302 as it came; follows a 307/308 with the method and body, dropping authorization off the origin', async () => {
    const seen: Array<{ url: string; method: string; body: string; authorization?: string }> = [];
    const base = await serve((req, res, body) => {
      seen.push({ url: req.url!, method: req.method!, body, ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
      if (req.url === '/none') return void res.writeHead(204).end();
      if (req.url === '/found') return void res.writeHead(302, { location: '/elsewhere' }).end();
      if (req.url === '/moved') return void res.writeHead(307, { location: '/v1/here' }).end('moved');
      if (req.url === '/v1/here') return void res.writeHead(308, { location: `${base.replace('127.0.0.1', 'localhost')}/v1/there` }).end();
      if (req.url === '/loop') return void res.writeHead(307, { location: '/loop' }).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER_JSON);
    });
    const fetch = createHttpFetch();
    const none = await fetch(`${base}/none`, { method: 'POST', body: '{}' });
    expect([none.status, await none.text()]).toEqual([204, '']);
    const found = await fetch(`${base}/found`, { method: 'POST', body: '{}' });
    expect([found.status, found.headers.get('location')]).toEqual([302, '/elsewhere']);
    seen.length = 0;
    const moved = await fetch(`${base}/moved`, { method: 'POST', body: '{"a":1}', headers: { authorization: 'Bearer sk-test' } });
    expect([moved.status, await moved.json()]).toEqual([200, ANSWER]);
    expect(seen).toEqual([
      { url: '/moved', method: 'POST', body: '{"a":1}', authorization: 'Bearer sk-test' },
      { url: '/v1/here', method: 'POST', body: '{"a":1}', authorization: 'Bearer sk-test' },
      { url: '/v1/there', method: 'POST', body: '{"a":1}' },
    ]);
    seen.length = 0;
    const loop = await fetch(`${base}/loop`, { method: 'POST', body: '{}' });
    expect([loop.status, seen.length]).toEqual([307, 6]);
  });

  it('a reused socket the server dropped is a retryable connection failure: the next attempt answers', async () => {
    const sockets = new Set<Socket>();
    let count = 0;
    const base = await serve((req, res) => {
      count++;
      const seen = sockets.has(req.socket);
      sockets.add(req.socket);
      // The keep-alive race: the server gave up on the idle socket just as the client reused it.
      if (count === 2 && seen) return void req.socket.destroy();
      res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER_JSON);
    });
    const llm = createLlmClient({ baseURL: `${base}/v1`, model: MODEL, stream: false, retry: { baseDelayMs: 1, maxRetries: 1 } });
    expect((await llm.complete(ASK)).message.content).toBe('hi');
    expect((await llm.complete(ASK)).message.content).toBe('hi');
  });

  it('an abort before the call and after the headers both fail with an AbortError', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{');
    });
    const fetch = createHttpFetch();
    await expect(fetch(`${base}/x`, { method: 'POST', body: '{}', signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    const controller = new AbortController();
    const response = await fetch(`${base}/x`, { method: 'POST', body: '{}', signal: controller.signal });
    controller.abort();
    await expect(response.text()).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('a 1 MB answer with a lone surrogate in it arrives whole', async () => {
    const text = 'x'.repeat(1 << 20) + '\ud800';
    const body = JSON.stringify({ text });
    const base = await serve((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(body));
    const response = await createHttpFetch()(`${base}/x`, { method: 'POST', body: JSON.stringify({ text }) });
    expect(((await response.json()) as { text: string }).text).toBe(text);
  });
});
