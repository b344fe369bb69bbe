/**
 * The embedded redis-server never outlives chatgate: it stops when its parent is SIGKILLed, and
 * one left behind by an earlier run (its owner gone) is stopped at the next start, not reused.
 * Never touches the shared Redis on 6379.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { closedPort, isRunning, spawnChatgate, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';

describe('the embedded redis-server', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'chatgate-orphan-'));
  const procs: ChatgateProcess[] = [];
  afterAll(async () => {
    await Promise.all(procs.map((proc) => stopChatgate(proc)));
    rmSync(stateDir, { recursive: true, force: true });
  });
  const start = async (dir: string) => {
    const proc = spawnChatgate(['start', '--demo'], {
      CHATGATE_REDIS_FALLBACK_PORT: String(await closedPort()), CHATGATE_HTTP_PORT: '0', CHATGATE_STATE_DIR: dir, CHATGATE_LOG_LEVEL: 'warn',
    });
    procs.push(proc);
    const [, pid] = await proc.waitFor('stderr', /started redis-server \(pid (\d+)\)/);
    await proc.ready();
    return { proc, redisPid: Number(pid) };
  };

  it('stops when chatgate is SIGKILLed', async () => {
    const { proc, redisPid } = await start(join(stateDir, 'killed'));
    expect(isRunning(redisPid)).toBe(true);
    proc.child.kill('SIGKILL');
    await proc.exited;
    await vi.waitFor(() => expect(isRunning(redisPid)).toBe(false), { timeout: 10_000, interval: 50 });
  });

  it('stops when a second Ctrl+C cuts the shutdown short', async () => {
    const { proc, redisPid } = await start(join(stateDir, 'twice'));
    proc.child.kill('SIGINT');
    await proc.waitFor('stderr', /SIGINT: shutting down/);
    proc.child.kill('SIGINT');
    await proc.exited;
    await vi.waitFor(() => expect(isRunning(redisPid)).toBe(false), { timeout: 10_000, interval: 50 });
  });

  it('is stopped, not reused, when an earlier run left it behind', async () => {
    const dir = join(stateDir, 'stale');
    mkdirSync(join(dir, 'redis'), { recursive: true });
    const port = await closedPort();
    const stale = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', join(dir, 'redis'), '--save', ''], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
    for await (const chunk of stale.stdout!) if (/ready to accept connections/i.test(String(chunk))) break;
    stale.stdout!.resume();
    // As an earlier chatgate (pid 2^22 + 1: no such process) would have recorded it.
    writeFileSync(join(dir, 'redis', 'chatgate-redis.json'), JSON.stringify({ pid: stale.pid, port, ownerPid: 4_194_305 }));
    const exited = once(stale, 'exit');

    const { proc, redisPid } = await start(dir);
    await exited;
    expect(redisPid).not.toBe(stale.pid);
    expect(proc.stdout.text).toContain('stopped a redis-server left behind by an earlier run');
  });
});
