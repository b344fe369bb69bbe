/**
 * chatgate runs compiled: `scripts/build.mjs` builds a dist/ (here into a folder of its own under
 * test-output/) from which `start --demo` answers in the web chat — so the Lua scripts and the
 * page's files are found from there — with no tsx and no TypeScript module loaded; a worker alone
 * loads no channel library; stack traces name the .ts lines. The roles run against the shared
 * Redis with the test's own prefixes.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnChatgate, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORK = join(ROOT, 'test-output', `compiled-${process.pid}`);
const OUT = join(WORK, 'dist');

describe('the compiled CLI (scripts/build.mjs)', () => {
  let t: TestRedis;

  beforeAll(() => {
    mkdirSync(WORK, { recursive: true });
    const built = spawnSync(process.execPath, ['scripts/build.mjs', '--out', OUT], { cwd: ROOT, encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);
    t = createTestRedis();
  });

  afterAll(async () => {
    await t?.cleanup();
    rmSync(WORK, { recursive: true, force: true });
  });

  it('--check passes right after the build and says what to run where nothing was built', () => {
    const check = (outDir: string) => spawnSync(process.execPath, ['scripts/build.mjs', '--check', '--out', outDir], { cwd: ROOT, encoding: 'utf8' });
    expect(check(OUT).status).toBe(0);
    const never = check(join(WORK, 'never-built'));
    expect(never.status).toBe(1);
    expect(never.stderr).toContain('is not built: run `npm run build`');
  });

  it('runs `start --demo` from dist/: the web chat page, its assets and a reply (Lua scripts), without tsx, any .ts module or a platform library it does not use', async () => {
    const modules = join(WORK, 'start-modules.txt');
    const proc = spawnCompiled(['start', '--demo'], { ...roleEnv(t), CHATGATE_MODULE_LOG: modules, CHATGATE_STATE_DIR: join(WORK, 'state') });
    try {
      const [, chatUrl] = await proc.waitFor('stderr', /^Web chat: +(http:\/\/\S+)$/m);
      const base = new URL(chatUrl!).origin;
      const page = await fetch(chatUrl!);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('/chat/assets/chat.js');
      expect((await fetch(`${base}/chat/assets/chat.js`)).status).toBe(200);
      expect((await fetch(`${base}/chat/assets/vendor/marked.js`)).status).toBe(200);
      const posted = await fetch(`${base}/api/chat/compiled/messages`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'What is 6*7?', clientMessageId: 'm1' }),
      });
      expect(posted.status).toBe(202);
      expect(await demoReply(base, 'compiled')).toContain('42');
    } finally {
      await stopChatgate(proc);
    }
    const loaded = readModules(modules);
    expect(loaded.filter((url) => url.includes('/node_modules/tsx/'))).toEqual([]);
    expect(loaded.filter((url) => url.endsWith('.ts'))).toEqual([]);
    expect(loaded).toContain(`file://${OUT}/channels/web/page.js`);
    // No bot token: neither platform library is loaded (discord.js alone is ~30 MiB).
    expect(loaded.filter((url) => /\/node_modules\/(discord\.js|@discordjs|grammy)\/|\/dist\/channels\/(discord|telegram)\//.test(url))).toEqual([]);
    expect(loaded.filter((url) => url.startsWith(`file://${ROOT}`) && !url.startsWith(`file://${OUT}/`) && !url.includes('/node_modules/') && !url.includes('/test/helpers/'))).toEqual([]);
  });

  it('runs a worker alone without loading a channel, discord.js, grammY or the gateway', async () => {
    const modules = join(WORK, 'worker-modules.txt');
    const proc = spawnCompiled(['worker', '--demo'], { ...roleEnv(t), CHATGATE_MODULE_LOG: modules });
    try {
      await proc.ready();
    } finally {
      await stopChatgate(proc);
    }
    const loaded = readModules(modules);
    expect(loaded).toContain(`file://${OUT}/workers/main.js`);
    expect(loaded.filter((url) => /\/node_modules\/(discord\.js|@discordjs|grammy)\/|\/dist\/channels\/|\/dist\/src\/gateway\/(index|ingest)/.test(url))).toEqual([]);
  });

  it('names the TypeScript file and line in a stack trace', () => {
    const script = `const { ContextCompressor } = await import(${JSON.stringify(`${OUT}/src/index.js`)}); new ContextCompressor({ contextWindow: 1000, threshold: 1.5 });`;
    const run = spawnSync(process.execPath, ['--enable-source-maps', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('threshold');
    expect(run.stderr).toMatch(/src\/core\/compaction\/[\w-]+\.ts:\d+:\d+/);
  });
});

/** `node --enable-source-maps <OUT>/src/cli.js --no-dotenv <args>`, recording the modules it loads. */
function spawnCompiled(args: string[], env: Record<string, string>): ChatgateProcess {
  return spawnChatgate(args, env, ['--import', './test/helpers/module-log.mjs', '--enable-source-maps', join(OUT, 'src/cli.js')]);
}

function roleEnv(t: TestRedis): Record<string, string> {
  // The demo model's reply at once (~4 s at the default pace).
  return { ...t.env, CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'warn', CHATGATE_DEMO_WORD_DELAY_MS: '0' };
}

/** Long-polls the web chat until the demo model's reply arrives. @returns its text. */
async function demoReply(base: string, conversation: string): Promise<string> {
  let after = 0;
  for (;;) {
    const polled = (await (await fetch(`${base}/api/chat/${conversation}/messages?after=${after}&timeoutMs=20000`)).json()) as { messages: Array<{ text: string }>; next: number };
    const reply = polled.messages.find((m) => m.text.includes('[demo model]'));
    if (reply) return reply.text;
    after = polled.next;
  }
}

function readModules(file: string): string[] {
  return [...new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean))];
}
