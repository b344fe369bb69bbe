/**
 * A 0-ms OpenAI-compatible endpoint for bench/pipeline: `GET /v1/models` (the CLI's start check)
 * and `POST /v1/chat/completions`, answered at once with a short reply and a usage block — plain
 * JSON, or SSE chunks when the request asks `stream: true`. No tokenizer, no checks: it exists to
 * cost nothing, so what the bench measures is chatgate.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A running fake endpoint. */
export interface BenchLlm {
  /** Base URL ending in `/v1`. */
  baseURL: string;
  /** Completions answered so far. */
  calls(): number;
  close(): Promise<void>;
}

const MODEL = 'gpt-4o-mini';

/** Starts the fake on a free loopback port. */
export async function startBenchLlm(): Promise<BenchLlm> {
  let calls = 0;
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') return sendJson(res, { object: 'list', data: [{ id: MODEL, object: 'model' }] });
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404).end();
      return;
    }
    void readBody(req).then((body) => {
      calls++;
      const streamed = /"stream"\s*:\s*true/.test(body);
      const text = `ok ${calls}`;
      if (streamed) sendStream(res, text);
      else sendJson(res, completion(text));
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    calls: () => calls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const USAGE = { prompt_tokens: 40, completion_tokens: 3, total_tokens: 43 };

function completion(text: string) {
  return {
    id: 'chatcmpl-bench', object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: MODEL,
    choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: text } }], usage: USAGE,
  };
}

function sendStream(res: ServerResponse, text: string): void {
  const chunk = (delta: object, finish: string | null, usage?: object) => `data: ${JSON.stringify({
    id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: MODEL,
    choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}),
  })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(chunk({ role: 'assistant', content: text }, null) + chunk({}, 'stop') + chunk({}, null, USAGE) + 'data: [DONE]\n\n');
}

function sendJson(res: ServerResponse, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', () => resolve(''));
  });
}
