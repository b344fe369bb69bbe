/**
 * An OpenAI-compatible endpoint whose every completion is refused with 400 (a permanent error):
 * the turns of bench/storage's failure phase fail for good, so their messages become dead letters
 * and their turn jobs failed jobs. `/v1/models` answers, so a worker starts against it.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts the endpoint on a free loopback port. @returns its base URL (ending in `/v1`) and a close. */
export async function startFailingLlm(): Promise<{ baseURL: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    const ok = req.method === 'GET' && req.url === '/v1/models';
    const body = JSON.stringify(ok
      ? { object: 'list', data: [{ id: 'gpt-4o-mini', object: 'model' }] }
      : { error: { message: 'bench: this request is refused', type: 'invalid_request_error', code: 'bench_refused' } });
    res.writeHead(ok ? 200 : 400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
