/**
 * bench/concurrency: how many turns one `chatgate worker` process holds at once when the model is
 * slow, as real ones are. bench/pipeline's private redis-server, gateway, worker and web client,
 * with a fake LLM that answers each completion after CONCURRENCY_LLM_MS (default 2000) ms; the
 * worker runs with CHATGATE_WORKER_CONCURRENCY = each of CONCURRENCY_LEVELS (default 4,64,256),
 * and as many sessions as that post in a closed loop (3 messages each). Prints msg/s against the
 * ideal (concurrency ÷ model latency), the turns in flight (msg/s × mean post → reply), the
 * model calls open at once (peak), the worker's and the gateway's CPU ms per message and the
 * worker's RSS at the end.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startBenchLlm } from './pipeline/fake-llm.js';
import { createWebClient } from './pipeline/load.js';
import { cpuMs, roleEnv, rssMiB, startRole, type RoleProcess } from './pipeline/procs.js';
import { freePort, startBenchRedis } from './pipeline/redis.js';
import { printTable } from './util.js';

const LLM_MS = Number(process.env.CONCURRENCY_LLM_MS ?? 2000);
const LEVELS = (process.env.CONCURRENCY_LEVELS ?? '4,64,256').split(',').map(Number);
const MESSAGES_PER_SESSION = 3;

export async function runConcurrencyBench(): Promise<void> {
  const redis = await startBenchRedis();
  const llm = await startBenchLlm();
  const slow = await startDelayingProxy(llm.baseURL, LLM_MS);
  const rows: Array<Array<string | number>> = [];
  try {
    for (const [k, level] of LEVELS.entries()) {
      const tag = `bench-conc-${process.pid}-${k}`;
      const port = await freePort();
      const env = roleEnv({ redisUrl: redis.url, llmUrl: slow.baseURL, tag, port, logLevel: 'warn' }, { CHATGATE_MODEL_TIMEOUT_MS: String(Math.max(30_000, LLM_MS * 4)) });
      const roles: RoleProcess[] = [];
      try {
        const gateway = await startRole('gateway', env);
        roles.push(gateway);
        const worker = await startRole('worker', { ...env, CHATGATE_HTTP_PORT: '0', CHATGATE_WORKER_CONCURRENCY: String(level) });
        roles.push(worker);
        const client = createWebClient(`http://127.0.0.1:${port}`, tag);
        const [cpuBefore, gatewayBefore] = [cpuMs(worker.pid), cpuMs(gateway.pid)];
        const load = await client.closedLoop(level, level * MESSAGES_PER_SESSION);
        const perSecond = load.messages / load.seconds;
        const meanMs = load.latencies.reduce((a, b) => a + b, 0) / load.latencies.length;
        rows.push([level, load.messages, perSecond.toFixed(1), (level / (LLM_MS / 1000)).toFixed(1), ((perSecond * meanMs) / 1000).toFixed(0),
          meanMs.toFixed(0), slow.peak(), ((cpuMs(worker.pid) - cpuBefore) / load.messages).toFixed(2), ((cpuMs(gateway.pid) - gatewayBefore) / load.messages).toFixed(2), rssMiB(worker.pid).toFixed(0)]);
      } finally {
        for (const role of roles.reverse()) await role.stop().catch(() => undefined);
      }
    }
  } finally {
    await slow.close();
    await llm.close();
    await redis.close();
  }
  console.log(`\nconcurrency: one worker process, a model answering after ${LLM_MS} ms, closed loop of as many sessions as the concurrency (${MESSAGES_PER_SESSION} messages each)\n`);
  printTable(['CHATGATE_WORKER_CONCURRENCY', 'messages', 'msg/s', 'ideal msg/s', 'turns in flight', 'mean post → reply ms', 'model calls at once (peak)', 'worker CPU ms/msg', 'gateway CPU ms/msg', 'worker RSS MiB'], rows);
}

/** An HTTP proxy to `target` (a `/v1` base URL) that holds every completion `delayMs` before forwarding it. */
async function startDelayingProxy(target: string, delayMs: number): Promise<{ baseURL: string; peak(): number; close(): Promise<void> }> {
  const upstream = new URL(target);
  let peak = 0;
  let inFlight = 0;
  const server = createServer((req, res) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    res.once('close', () => { inFlight--; });
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const delay = req.url?.endsWith('/chat/completions') ? delayMs : 0;
      setTimeout(() => {
        void fetch(`${upstream.origin}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: req.method === 'POST' ? Buffer.concat(parts) : undefined })
          .then(async (answer) => {
            res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
            res.end(Buffer.from(await answer.arrayBuffer()));
          }, () => res.writeHead(502).end());
      }, delay);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    peak: () => { const p = peak; peak = 0; return p; },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
