import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { pingRedis, resolveRedis, type ResolvedRedis } from '../../src/redis/launcher.js';
import { isRunning } from '../helpers/cli-process.js';

const SHARED_PORT = 6379;
const stateDir = mkdtempSync(join(tmpdir(), 'cg-launcher-'));
const started: ResolvedRedis[] = [];

/** A loopback port nothing listens on (bound by the OS, then released). */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

type CodedError = Error & { code: string };

/** The error a promise rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<CodedError> {
  return promise.then(
    () => { throw new Error('expected a rejection'); },
    (err: unknown) => err as CodedError,
  );
}

afterAll(async () => {
  await Promise.all(started.map((r) => r.stop()));
  rmSync(stateDir, { recursive: true, force: true });
});

describe('resolveRedis', () => {
  it('starts its own redis-server on another port when the default address does not answer, and stop() ends it', async () => {
    const fallbackPort = await closedPort();
    const redis = await resolveRedis({ fallbackHost: '127.0.0.1', fallbackPort, stateDir });
    started.push(redis);
    expect(redis.source).toBe('spawned');
    const port = Number(new URL(redis.url).port);
    expect(port).not.toBe(fallbackPort);
    expect(port).not.toBe(SHARED_PORT);
    expect(existsSync(join(stateDir, 'redis'))).toBe(true);

    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    expect(await client.ping()).toBe('PONG');
    expect(await client.config('GET', 'dir')).toEqual(['dir', join(stateDir, 'redis')]);
    client.disconnect();

    const pid = redis.pid as number;
    expect(isRunning(pid)).toBe(true);
    await redis.stop();
    expect(isRunning(pid)).toBe(false);
    expect(await pingRedis(redis.url, 500)).toMatch(/ECONNREFUSED/);
  });

  it('uses the default address when it answers, and stop() leaves that Redis alone', async () => {
    const own = await resolveRedis({ fallbackPort: await closedPort(), stateDir });
    started.push(own);
    const port = Number(new URL(own.url).port);
    const reused = await resolveRedis({ fallbackHost: '127.0.0.1', fallbackPort: port, stateDir });
    expect(reused).toMatchObject({ source: 'default', url: own.url });
    await reused.stop();
    expect(await pingRedis(own.url)).toBeUndefined();
    await own.stop();
  });

  it('shares the server it started with another process using the same state folder', async () => {
    const dir = join(stateDir, 'shared');
    const first = await resolveRedis({ fallbackPort: await closedPort(), stateDir: dir });
    started.push(first);
    expect(existsSync(join(dir, 'redis', 'chatgate-redis.json'))).toBe(true);
    const second = await resolveRedis({ fallbackPort: await closedPort(), stateDir: dir });
    expect(second).toMatchObject({ source: 'reused', url: first.url });
    await second.stop();
    expect(await pingRedis(first.url)).toBeUndefined();
    await first.stop();
    expect(existsSync(join(dir, 'redis', 'chatgate-redis.json'))).toBe(false);
    const third = await resolveRedis({ fallbackPort: await closedPort(), stateDir: dir });
    started.push(third);
    expect(third.source).toBe('spawned');
    await third.stop();
  });

  it('uses REDIS_URL when it answers and fails clearly when it does not', async () => {
    const own = await resolveRedis({ fallbackPort: await closedPort(), stateDir });
    started.push(own);
    await expect(resolveRedis({ url: own.url, stateDir })).resolves.toMatchObject({ source: 'env', url: own.url });
    await own.stop();
    const dead = `redis://:hunter2secret@127.0.0.1:${await closedPort()}`;
    const error = await rejection(resolveRedis({ url: dead, stateDir }));
    expect(error).toMatchObject({ code: 'REDIS_UNREACHABLE' });
    expect(error.message).toMatch(/^REDIS_URL redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ is not reachable \(.*ECONNREFUSED.*\)/);
    expect(error.message).not.toContain('hunter2secret');
  });

  it('says how to install Redis or use Docker when there is no redis-server', async () => {
    const fallbackPort = await closedPort();
    const error = await rejection(resolveRedis({ fallbackPort, stateDir, redisServerCommand: 'redis-server-that-does-not-exist' }));
    expect(error).toMatchObject({ code: 'REDIS_NOT_FOUND' });
    expect(error.message).toContain('apt-get install redis-server');
    expect(error.message).toContain('docker run');
    expect(error.message).toContain('REDIS_URL');
  });
});
