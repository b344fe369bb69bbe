/**
 * bin/chatgate.js (`chatgate` on PATH) never runs a stale dist/: it builds a missing one, rebuilds
 * one older than the sources, and when dist/ cannot be written runs the sources through tsx, each
 * said in one line on stderr (stdout stays the command's). Runs on a copy of the project under
 * test-output/ (node_modules still resolves from the project), so the real dist/ is not touched.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const COPY = join(ROOT, 'test-output', `bin-${process.pid}`);

describe('bin/chatgate.js', () => {
  beforeAll(() => {
    mkdirSync(COPY, { recursive: true });
    for (const part of ['bin', 'scripts', 'src', 'channels', 'workers', 'package.json', 'tsconfig.json']) cpSync(join(ROOT, part), join(COPY, part), { recursive: true });
  });

  afterAll(() => rmSync(COPY, { recursive: true, force: true }));

  it('builds a missing dist/, runs it as is while the sources are unchanged, and rebuilds it after a change', () => {
    const first = chatgate('--version');
    expect(first).toMatchObject({ status: 0, stdout: `${version()}\n` });
    expect(first.stderr).toMatch(/^chatgate: built \S+dist \(\d+ files, \d+ ms\)\n$/);
    expect(chatgate('--version')).toMatchObject({ status: 0, stdout: `${version()}\n`, stderr: '' });

    const pkg = JSON.parse(readFileSync(join(COPY, 'package.json'), 'utf8')) as { version: string };
    writeFileSync(join(COPY, 'package.json'), JSON.stringify({ ...pkg, version: '9.9.9-test' }));
    const changed = chatgate('--version');
    expect(changed).toMatchObject({ status: 0, stdout: '9.9.9-test\n' });
    expect(changed.stderr).toMatch(/^chatgate: rebuilt the outdated \S+dist/);

    // A source edit too (not only package.json): the help text comes from src/cli.ts.
    const cli = join(COPY, 'src/cli.ts');
    writeFileSync(cli, readFileSync(cli, 'utf8').replace('Multi-channel chat-bot gateway with session hygiene.', 'Edited since the build.'));
    const edited = chatgate('--help');
    expect(edited.stdout).toContain('Edited since the build.');
    expect(edited.stderr).toMatch(/^chatgate: rebuilt the outdated/);
  });

  it('runs the sources through tsx, saying so in one line, when dist/ cannot be built', () => {
    rmSync(join(COPY, 'dist'), { recursive: true, force: true });
    writeFileSync(join(COPY, 'dist'), 'a file where the build wants a folder\n');
    const run = chatgate('--version');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^\S+\n$/);
    expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^chatgate: could not build \S+dist \(.+\); running the sources through tsx instead — run `npm run build`/)]);
  });
});

function chatgate(...args: string[]) {
  const { status, stdout, stderr } = spawnSync(process.execPath, [join(COPY, 'bin/chatgate.js'), ...args], {
    cwd: COPY, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
  });
  return { status, stdout, stderr };
}

function version(): string {
  return (JSON.parse(readFileSync(join(COPY, 'package.json'), 'utf8')) as { version: string }).version;
}
