/**
 * `npm start -- --demo` on a machine without Redis: REDIS_URL unset and the default address pointed
 * (CHATGATE_REDIS_FALLBACK_PORT, a test-only setting) at a closed port, so chatgate starts its own
 * redis-server in the state folder; the web chat answers through the offline demo model; SIGTERM
 * stops everything, that Redis included. Never touches the shared Redis on 6379.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { compiledCli, isRunning } from '../helpers/cli-process.js';
import { createTestRedis } from '../helpers/redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface WebReply { seq: number; text: string }

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Collects a child's output and resolves when a line matches. */
function waitForLine(child: ChildProcessWithoutNullStreams, stream: 'stdout' | 'stderr', pattern: RegExp, output: { text: string }): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const match = pattern.exec(output.text);
      if (match) {
        child[stream].off('data', check);
        child.off('exit', onExit);
        resolve(match);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`chatgate exited (${code}) before printing ${pattern}:\n${output.text}`));
    child[stream].on('data', check);
    child.once('exit', onExit);
    check();
  });
}

/** The processes whose parent is `pid` (from /proc). */
function childPids(pid: number): number[] {
  return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).filter((name) => {
    try {
      return readFileSync(`/proc/${name}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1] === String(pid);
    } catch {
      return false;
    }
  }).map(Number);
}

describe('chatgate start --demo on a machine without Redis', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'chatgate-demo-'));
  let child: ChildProcessWithoutNullStreams | undefined;

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const gone = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM'); // lets it stop its redis-server
      await gone;
    }
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('starts its own Redis, answers in the web chat through the demo model, and stops that Redis on SIGTERM', async () => {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '',
      CHATGATE_REDIS_FALLBACK_PORT: String(await closedPort()), CHATGATE_HTTP_PORT: '0', CHATGATE_STATE_DIR: stateDir, CHATGATE_LOG_LEVEL: 'warn',
      CHATGATE_DEMO_WORD_DELAY_MS: '0', // the whole reply at once (~4 s at the default pace)
    };
    child = spawn(process.execPath, [...compiledCli(), '--no-dotenv', 'start', '--demo'], { cwd: ROOT, env });
    const stdout = { text: '' };
    const stderr = { text: '' };
    child.stdout.on('data', (chunk: Buffer) => { stdout.text += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr.text += chunk.toString(); });
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));

    const [, redisPid] = await waitForLine(child, 'stderr', /started redis-server \(pid (\d+)\)/, stderr);
    expect(stderr.text).toContain(`with its data in ${stateDir}/redis`);
    await waitForLine(child, 'stderr', /Press Ctrl\+C to stop\./, stderr);
    expect(stderr.text).toContain('DEMO MODE');
    expect(stderr.text).toMatch(/^Web chat: +http:\/\/\S+$/m);
    const chatUrl = /^Web chat: +(http:\/\/\S+)$/m.exec(stderr.text)![1];
    const base = new URL(chatUrl).origin;

    expect((await fetch(chatUrl)).status).toBe(200);
    const posted = await fetch(`${base}/api/chat/e2e-demo/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'What is 6*7?', clientMessageId: 'm1' }),
    });
    expect(posted.status).toBe(202);
    const replies: WebReply[] = [];
    let after = 0;
    while (!replies.some((r) => r.text.includes('[demo model]'))) {
      const polled = (await (await fetch(`${base}/api/chat/e2e-demo/messages?after=${after}&timeoutMs=20000`)).json()) as { messages: WebReply[]; next: number };
      replies.push(...polled.messages);
      after = polled.next;
    }
    const answer = replies.find((r) => r.text.includes('[demo model]'))!;
    expect(answer.text).toContain('42');
    const sessions = (await (await fetch(`${base}/api/sessions`)).json()) as { items: Array<{ id: string; contextWindow: number; promptTokens: number }> };
    expect(sessions.items.find((row) => row.id === 'web:e2e-demo')).toMatchObject({ contextWindow: 8192 });
    expect(sessions.items.find((row) => row.id === 'web:e2e-demo')!.promptTokens).toBeGreaterThan(0);

    expect(isRunning(Number(redisPid))).toBe(true);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr.text).toContain('stopped');
    expect(isRunning(Number(redisPid))).toBe(false);
  });

  it('a bare `npm start` with no LLM endpoint configured says so and runs the demo model instead of failing; SIGTERM to npm stops chatgate too', async () => {
    const t = createTestRedis();
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', REDIS_URL: t.url,
      CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, CHATGATE_HTTP_PORT: '0', CHATGATE_STATE_DIR: stateDir, CHATGATE_LOG_LEVEL: 'warn',
    };
    // The README's command, through npm: npm's signal must reach chatgate (the script `exec`s node, no shell left between them).
    const bare = spawn('npm', ['start', '--silent', '--', '--no-dotenv'], { cwd: ROOT, env });
    const stdout = { text: '' };
    const stderr = { text: '' };
    bare.stdout.on('data', (chunk: Buffer) => { stdout.text += chunk.toString(); });
    bare.stderr.on('data', (chunk: Buffer) => { stderr.text += chunk.toString(); });
    const exited = new Promise<number | null>((resolve) => bare.once('exit', (code) => resolve(code)));
    try {
      await waitForLine(bare, 'stderr', /Press Ctrl\+C to stop\./, stderr);
      expect(stderr.text).toContain('no LLM endpoint is configured');
      expect(stderr.text).toContain('OFFLINE DEMO MODEL');
      expect(stderr.text).toMatch(/^Web chat: +http:\/\/\S+$/m);
    } finally {
      const chatgatePids = childPids(bare.pid!);
      const commands = new Map(chatgatePids.map((pid) => [pid, readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ')]));
      const commandOf = (pid: number) => commands.get(pid) ?? '';
      bare.kill('SIGTERM');
      expect(await exited).toBe(0);
      await t.cleanup();
      // npm's child is chatgate itself (the compiled CLI on node; prestart built dist/), and it is gone: nothing left running without a parent.
      expect(chatgatePids.map((pid) => commandOf(pid))).toEqual([expect.stringMatching(/^node --enable-source-maps dist\/src\/cli\.js start/)]);
      expect(isRunning(chatgatePids[0]!)).toBe(false);
    }
  });
});
