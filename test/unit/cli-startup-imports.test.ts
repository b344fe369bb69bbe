/**
 * What `chatgate --help` and the read-only commands load. Each run is a child process of the
 * compiled CLI under test/helpers/module-log.mjs, which writes down every module it resolves.
 * The read-only commands get an invalid option, so they stop at the configuration (no Redis) after
 * their module and everything it imports have loaded.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { compiledCli } from '../helpers/cli-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'chatgate-imports-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Libraries no command in this file uses: channels, the LLM SDK, MCP, the tokenizer, the monitor's web stack, the browser. */
const ROLE_ONLY = ['grammy', 'discord.js', 'openai', '@modelcontextprotocol/sdk', 'gpt-tokenizer', 'hono', '@hono/node-server', '@bull-board/api', 'prom-client', 'playwright-core', 'unpdf', 'marked', 'dompurify'];

/** The packages (`name` or `@scope/name`) whose modules a `chatgate <args>` process resolved, and its exit code. */
function packagesLoaded(args: string[], env: Record<string, string> = {}): { packages: Set<string>; status: number | null; stderr: string } {
  const log = join(dir, `${args.join('-').replace(/\W+/g, '_')}.log`);
  const run = spawnSync(process.execPath, ['--import', './test/helpers/module-log.mjs', ...compiledCli(), '--no-dotenv', ...args], {
    cwd: ROOT, encoding: 'utf8', timeout: 30_000,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', CHATGATE_MODULE_LOG: log, ...env },
  });
  const packages = new Set<string>();
  for (const url of readFileSync(log, 'utf8').split('\n')) {
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (match) packages.add(match[1]);
  }
  return { packages, status: run.status, stderr: run.stderr };
}

describe('chatgate startup imports', () => {
  it('--help loads the command definitions only: no Redis client, config schema, logger or component library', () => {
    const { packages, status } = packagesLoaded(['--help']);
    expect(status).toBe(0);
    for (const name of [...ROLE_ONLY, 'bullmq', 'ioredis', 'zod', 'pino']) expect(packages, name).not.toContain(name);
    expect(packages).toContain('commander');
  });

  // An invalid option: the command loads, reads the configuration and exits 1 before reaching Redis.
  const invalid = { CHATGATE_MODEL_TIMEOUT_MS: '5' };
  const commands: Array<{ args: string[]; uses: string[] }> = [
    { args: ['sessions'], uses: [] },
    { args: ['usage'], uses: [] },
    { args: ['transcript', 'web:x'], uses: [] },
    { args: ['budgets', 'list'], uses: [] },
    { args: ['status'], uses: ['bullmq'] },
    { args: ['doctor'], uses: ['bullmq'] },
  ];
  for (const { args, uses } of commands) {
    it(`${args.join(' ')} loads none of the roles' libraries`, () => {
      const { packages, status, stderr } = packagesLoaded(args, invalid);
      expect(stderr).toContain('CHATGATE_MODEL_TIMEOUT_MS');
      expect(status).toBe(1);
      expect(packages).toContain('zod');
      // pino-pretty too: its output is no terminal, so it logs JSON.
      for (const name of [...ROLE_ONLY, 'bullmq', 'pino-pretty'].filter((n) => !uses.includes(n))) expect(packages, name).not.toContain(name);
    });
  }
});
