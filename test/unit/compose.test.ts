import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { describeConfig } from '../../src/config.js';

interface Healthcheck { test: string[]; interval: string; timeout: string; retries: number }
interface Service {
  image: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  env_file?: string[];
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  healthcheck?: Healthcheck;
}
interface Compose { services: Record<string, Service>; volumes?: Record<string, unknown> }

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const compose = parse(read('docker-compose.yml'), { merge: true }) as Compose;
const dockerfile = read('Dockerfile');
const { redis, gateway, worker } = compose.services;

describe('docker-compose.yml', () => {
  it('runs exactly Redis, one gateway and workers', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['gateway', 'redis', 'worker']);
  });

  it('runs Redis with AOF persistence on a named volume and a PING health check', () => {
    expect(redis.image).toMatch(/^redis:7/);
    expect(redis.command?.join(' ')).toMatch(/--appendonly yes/);
    const dataDir = redis.command?.[redis.command.indexOf('--dir') + 1] ?? '/data';
    const [volume, mountPoint] = (redis.volumes?.[0] ?? '').split(':');
    expect(mountPoint).toBe(dataDir);
    expect(Object.keys(compose.volumes ?? {})).toContain(volume);
    expect(redis.healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping']);
  });

  it('builds one image from the Dockerfile for the gateway and the workers', () => {
    for (const service of [gateway, worker]) {
      expect(service.image).toBe(gateway.image);
      expect(service.build).toEqual({ context: '.', dockerfile: 'Dockerfile' });
    }
    expect(existsSync(new URL('Dockerfile', root))).toBe(true);
  });

  it('starts the roles with the CLI commands `chatgate gateway` and `chatgate worker`', () => {
    expect(gateway.command).toEqual(['chatgate', 'gateway']);
    expect(worker.command).toEqual(['chatgate', 'worker']);
    // The image puts `chatgate` on PATH as the CLI entry point; the CLI must offer both commands.
    expect(dockerfile).toMatch(/exec node --enable-source-maps \/app\/dist\/src\/cli\.js "\$@"/);
    if (existsSync(new URL('src/cli.ts', root))) {
      const cli = read('src/cli.ts');
      for (const command of ['start', 'gateway', 'worker']) expect(cli).toMatch(new RegExp(`['"\`]${command}\\b`));
    }
  });

  it('runs three workers and one gateway', () => {
    expect(worker.deploy?.replicas).toBe(3);
    expect(gateway.deploy?.replicas ?? 1).toBe(1);
  });

  it('passes .env through and points both roles at the redis service', () => {
    for (const service of [gateway, worker]) {
      expect(service.env_file).toEqual(['.env']);
      expect(service.environment?.REDIS_URL).toBe('redis://redis:6379');
      expect(service.depends_on?.redis).toEqual({ condition: 'service_healthy' });
    }
    expect(existsSync(new URL('.env.example', root))).toBe(true);
  });

  it('only sets real chatgate options in the services environment', () => {
    const known = new Set(describeConfig().map((option) => option.env));
    for (const service of [gateway, worker]) {
      for (const key of Object.keys(service.environment ?? {})) expect(known.has(key), key).toBe(true);
    }
  });

  it('binds the gateway off loopback inside its container only with a monitor token, and publishes on host loopback', () => {
    expect(gateway.environment?.CHATGATE_HTTP_HOST).toBe('0.0.0.0');
    expect(gateway.environment?.CHATGATE_MONITOR_TOKEN).toMatch(/^\$\{CHATGATE_MONITOR_TOKEN:\?/);
    const port = gateway.environment?.CHATGATE_HTTP_PORT;
    expect(gateway.ports).toEqual([`127.0.0.1:${port}:${port}`]);
    expect(dockerfile).toMatch(new RegExp(`^EXPOSE ${port}$`, 'm'));
  });

  it('gives every service a health check; the gateway probes /healthz and the workers /readyz on their own port', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      expect(service.healthcheck?.test?.[0], name).toBe('CMD');
      expect(service.healthcheck?.interval, name).toMatch(/^\d+s$/);
      expect(service.healthcheck?.retries, name).toBeGreaterThan(0);
    }
    expect(gateway.healthcheck?.test.join(' ')).toContain(`127.0.0.1:${gateway.environment?.CHATGATE_HTTP_PORT}/healthz`);
    expect(worker.environment?.CHATGATE_WORKER_HTTP_PORT).not.toBe(gateway.environment?.CHATGATE_HTTP_PORT);
    expect(worker.healthcheck?.test.join(' ')).toContain(`127.0.0.1:${worker.environment?.CHATGATE_WORKER_HTTP_PORT}/readyz`);
  });
});

describe('Dockerfile', () => {
  const stages = dockerfile.match(/^FROM .+$/gm) ?? [];

  it('is multi-stage and installs production dependencies only', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toMatch(/COPY --from=deps/);
  });

  it('runs as a non-root user in the final stage', () => {
    const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const user = finalStage.match(/^USER (\S+)$/m)?.[1];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
  });

  it('compiles every source folder the CLI needs in a build stage and runs the compiled dist/', () => {
    for (const folder of ['src', 'channels', 'workers', 'scripts']) expect(dockerfile).toMatch(new RegExp(`^COPY .*\\b${folder} \\./${folder}$`, 'm'));
    expect(dockerfile).toMatch(/^RUN node scripts\/build\.mjs$/m);
    const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(finalStage).toMatch(/^COPY --from=build .*\/app\/dist \.\/dist$/m);
  });
});
