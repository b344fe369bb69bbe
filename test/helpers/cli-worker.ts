import { spawn, type ChildProcess } from 'node:child_process';
import { renameSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

import { compiledCli } from './cli-process.js';
import { testShards } from './redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What {@link spawnCliWorker} needs: Redis, prefixes and the LLM endpoint. */
export interface CliWorkerOptions {
  redisUrl: string;
  keyPrefix: string;
  queuePrefix: string;
  /** OpenAI-compatible base URL (ends in `/v1`); it must answer `GET /models` (see {@link startModelsFront}). */
  baseURL: string;
  /** Further `CHATGATE_*` options, e.g. `CHATGATE_LEASE_TTL_MS`. */
  env?: Readonly<Record<string, string>>;
}

/**
 * Starts the real worker entry point, `chatgate --no-dotenv worker` from the compiled build
 * ({@link compiledCli}), with its configuration in the environment (nothing else inherited but PATH and HOME), and resolves once
 * it logs `worker started`. Its stdout carries the JSON log lines.
 * @throws when the process exits first (with its stderr).
 */
export async function spawnCliWorker(options: CliWorkerOptions): Promise<ChildProcess> {
  const env = {
    PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '',
    REDIS_URL: options.redisUrl, CHATGATE_KEY_PREFIX: options.keyPrefix, CHATGATE_QUEUE_PREFIX: options.queuePrefix, CHATGATE_QUEUE_SHARDS: String(testShards()),
    OPENAI_BASE_URL: options.baseURL, OPENAI_API_KEY: 'test-key', CHATGATE_MODEL: 'gpt-4o-mini', CHATGATE_CONTEXT_WINDOW: '16000',
    CHATGATE_LOG_LEVEL: 'info', ...options.env,
  };
  const child = spawn(process.execPath, [...compiledCli(), '--no-dotenv', 'worker'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`worker exited early (${code}): ${stderr.trim()}`));
    child.once('exit', onExit);
    waitForLine(child, '"worker started"').then(() => {
      child.off('exit', onExit);
      resolve();
    }, reject);
  });
  return child;
}

/**
 * What {@link spawnEffectWorker} needs: as {@link CliWorkerOptions} (the effect worker does not check
 * `/models`: the fake's URL will do; `env` takes its switches `EFFECT_BLOCK: '1'` and `BOOK_APPROVAL: 'ask'`),
 * and the shard count.
 */
export interface EffectWorkerOptions extends CliWorkerOptions {
  queueShards: number;
}

/**
 * Starts test/helpers/effect-worker.ts (a worker with the `lookup` and `book` tools), compiled, as a
 * child process and resolves once it logs `worker started`.
 */
export async function spawnEffectWorker(options: EffectWorkerOptions): Promise<ChildProcess> {
  const env = {
    PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', REDIS_URL: options.redisUrl, KEY_PREFIX: options.keyPrefix, QUEUE_PREFIX: options.queuePrefix,
    QUEUE_SHARDS: String(options.queueShards), OPENAI_BASE_URL: options.baseURL, ...options.env,
  };
  const child = spawn(process.execPath, ['--enable-source-maps', compiledEffectWorker()], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  await waitForLine(child, '"worker started"');
  return child;
}

/**
 * test/helpers/effect-worker.ts compiled into dist/test/helpers/, so that its imports of src/ and
 * workers/ load the compiled build as `chatgate worker` does (through tsx it started on ~1.5 s more
 * CPU). Compiled anew on each call (a few ms) and renamed into place, so a process starting it
 * meanwhile never reads a torn file.
 */
function compiledEffectWorker(): string {
  compiledCli();
  const file = join(ROOT, 'dist/test/helpers/effect-worker.js');
  buildSync({
    absWorkingDir: ROOT, entryPoints: ['test/helpers/effect-worker.ts'], outfile: `${file}.${process.pid}.tmp`,
    format: 'esm', platform: 'node', target: 'node20', sourcemap: 'inline', logLevel: 'silent',
  });
  renameSync(`${file}.${process.pid}.tmp`, file);
  return file;
}

/** Resolves when the child's stdout prints a line containing `text`. */
export function waitForLine(child: ChildProcess, text: string): Promise<void> {
  const lines = createInterface({ input: child.stdout! });
  return new Promise((resolve) => {
    const onLine = (line: string) => {
      if (!line.includes(text)) return;
      lines.off('line', onLine);
      resolve();
    };
    lines.on('line', onLine);
  });
}

/**
 * A front for a fake chat-completions server that lists `models` on `GET /v1/models` (the CLI
 * checks the endpoint before it starts) and forwards everything else, closing the upstream request
 * when the client goes away (a SIGKILLed worker's held call is abandoned).
 */
export async function startModelsFront(targetBaseURL: string, models: string[] = ['gpt-4o-mini']): Promise<{ baseURL: string; close(): Promise<void> }> {
  const target = new URL(targetBaseURL);
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model' })) }));
      return;
    }
    const forward = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (reply) => {
      res.writeHead(reply.statusCode ?? 502, reply.headers);
      reply.pipe(res);
    });
    forward.on('error', () => res.destroy());
    res.on('close', () => { if (!res.writableFinished) forward.destroy(); });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
