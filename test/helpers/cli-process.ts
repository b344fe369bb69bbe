import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createTestRedis, type TestRedis } from './redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// The build's own staleness check (plain JavaScript), run here: a node process per spawn just to find dist/ fresh cost ~0.2 s CPU.
const { buildState } = await import(pathToFileURL(`${ROOT}scripts/build.mjs`).href) as { buildState(root: string): { fresh: boolean } };

/** A running `chatgate` process with its output collected. */
export interface ChatgateProcess {
  child: ChildProcessWithoutNullStreams;
  stdout: { text: string };
  stderr: { text: string };
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** Resolves with the first match of `pattern` in the stream; rejects when the process exits first. */
  waitFor(stream: 'stdout' | 'stderr', pattern: RegExp): Promise<RegExpExecArray>;
  /**
   * Resolves once the ready banner has ended (`Press Ctrl+C to stop.` on stderr), with the web chat
   * URL it named and that URL's origin (both '' for a role without one); rejects when the process exits first.
   */
  ready(): Promise<{ webChatUrl: string; origin: string }>;
}

/**
 * Node's arguments up to the CLI's entry point: the compiled build in dist/, as `chatgate` and
 * `npm start` run it (it starts on about half the CPU of the sources through tsx). Rebuilds dist/
 * first when the sources changed since it was built (test/global-setup.ts builds it before a run).
 * @throws Error when the build fails.
 */
export function compiledCli(): readonly string[] {
  if (!buildState(ROOT).fresh) {
    const built = spawnSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT, encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`scripts/build.mjs --if-stale failed (${built.status}): ${built.stderr}`);
  }
  return ['--enable-source-maps', 'dist/src/cli.js'];
}

/**
 * Spawns `node <cli> --no-dotenv <args>` with `env` on top of PATH and HOME (nothing else
 * inherited), in the project's folder. `cli` is node's arguments up to the entry point; default
 * {@link compiledCli} (the sources through tsx: `['--import', 'tsx', 'src/cli.ts']`).
 */
export function spawnChatgate(args: string[], env: Record<string, string>, cli: readonly string[] = compiledCli()): ChatgateProcess {
  const child = spawn(process.execPath, [...cli, '--no-dotenv', ...args], {
    cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
  });
  const stdout = { text: '' };
  const stderr = { text: '' };
  child.stdout.on('data', (chunk: Buffer) => { stdout.text += chunk.toString(); });
  child.stderr.on('data', (chunk: Buffer) => { stderr.text += chunk.toString(); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = (stream: 'stdout' | 'stderr', pattern: RegExp) => new Promise<RegExpExecArray>((resolve, reject) => {
    const output = stream === 'stdout' ? stdout : stderr;
    const check = () => {
      const match = pattern.exec(output.text);
      if (!match) return;
      child[stream].off('data', check);
      child.off('exit', onExit);
      resolve(match);
    };
    const onExit = (code: number | null) => reject(new Error(`chatgate exited (${code}) before printing ${pattern}:\n${stdout.text}\n${stderr.text}`));
    child[stream].on('data', check);
    child.once('exit', onExit);
    check();
  });
  const ready = async () => {
    await waitFor('stderr', /Press Ctrl\+C to stop\./);
    const webChatUrl = /^Web chat: +(http:\/\/\S+)$/m.exec(stderr.text)?.[1] ?? '';
    return { webChatUrl, origin: webChatUrl && new URL(webChatUrl).origin };
  };
  return { child, stdout, stderr, exited, waitFor, ready };
}

/** A running `chatgate start --demo` on its own test Redis prefixes (see {@link startDemo}). */
export interface Demo {
  t: TestRedis;
  proc: ChatgateProcess;
  /** The web chat URL the banner names, and its origin (where the dashboard and the APIs are). */
  webChatUrl: string;
  origin: string;
  /** Stops the process (SIGTERM) and deletes the test's keys. */
  stop(): Promise<void>;
}

/**
 * Starts `chatgate start --demo` on fresh test Redis prefixes, HTTP on a free port, logging
 * warnings only, `env` on top, and resolves once it is ready. @throws when it exits first.
 */
export async function startDemo(env: Record<string, string> = {}): Promise<Demo> {
  const t = createTestRedis();
  const proc = spawnChatgate(['start', '--demo'], { ...t.env, CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'warn', ...env });
  const stop = async () => {
    await stopChatgate(proc);
    await t.cleanup();
  };
  try {
    return { t, proc, ...await proc.ready(), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** What a finished `chatgate` run printed, and its exit code (null when killed by a signal). */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `chatgate <args>` as {@link spawnChatgate} does and resolves once it has exited and its output is closed. */
export function runChatgate(args: string[], env: Record<string, string>): Promise<CliResult> {
  const proc = spawnChatgate(args, env);
  return new Promise((resolve, reject) => {
    proc.child.once('error', reject);
    proc.child.once('close', (code) => resolve({ code, stdout: proc.stdout.text, stderr: proc.stderr.text }));
  });
}

/** Stops `proc` with SIGTERM if it still runs, and waits for it. */
export async function stopChatgate(proc: ChatgateProcess | undefined): Promise<void> {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill('SIGTERM');
  await proc.exited;
}

/** Whether a process with this pid exists (signal 0). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A loopback port nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = createNetServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A TCP server that accepts connections and never answers (a Bot API without a route). */
export async function startSilentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * An HTTP front for a fake platform server that forwards every request, except that requests for
 * which `hold` says true are held (never answered) until their client goes away. `held` fires
 * once per held request.
 */
export async function startHoldingFront(target: string, hold: (path: string, body: string) => boolean): Promise<{ url: string; held: Promise<void>; close(): Promise<void> }> {
  const upstream = new URL(target);
  let onHeld: () => void = () => undefined;
  const held = new Promise<void>((resolve) => { onHeld = resolve; });
  const server: Server = createServer((req, res) => {
    void readBody(req).then((body) => {
      if (hold(req.url ?? '', body)) {
        onHeld();
        return;
      }
      const forward = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.headers);
        reply.pipe(res);
      });
      forward.on('error', () => res.destroy());
      forward.end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
