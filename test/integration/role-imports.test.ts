import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { compiledCli } from '../helpers/cli-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Runs `script` as an ES module in a fresh `node` process in the project's folder, with dist/ built fresh; resolves with its last line of output. */
async function lastLineOf(script: string): Promise<string> {
  compiledCli();
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
  return stdout.trim().split('\n').at(-1)!;
}

/**
 * Loads `module` (of the compiled build in dist/, which keeps the sources' modules and imports one to one)
 * in a fresh process, optionally runs `then` there, and reports which channel-library modules
 * (discord.js, @discordjs/*, grammY — CommonJS, so in require.cache) got loaded.
 */
async function channelModulesLoadedBy(module: string, then = ''): Promise<string[]> {
  const script = [
    "const { createRequire } = await import('node:module');",
    `const loaded = await import(${JSON.stringify(new URL(module, `file://${ROOT}/`).href)});`,
    then,
    'const cache = createRequire(import.meta.url).cache;',
    "console.log(JSON.stringify(Object.keys(cache).filter((k) => /node_modules\\/(discord\\.js|@discordjs|grammy)\\//.test(k))));",
  ].join('\n');
  return JSON.parse(await lastLineOf(script)) as string[];
}

describe('lazy imports by role', () => {
  it('the CLI with its roles module (what `chatgate worker` loads) does not load discord.js or grammY', async () => {
    const roles = JSON.stringify(new URL('dist/src/cli/run.js', `file://${ROOT}/`).href);
    expect(await channelModulesLoadedBy('dist/src/cli.js', `void loaded; await import(${roles});`)).toEqual([]);
  });

  it('the encodings of an o200k_base model leave the cl100k_base table unloaded; those of GPT-4 load it', async () => {
    const script = (model: string) => [
      "const { createRequire } = await import('node:module');",
      `const { createTokenCounter } = await import(${JSON.stringify(new URL('dist/src/llm/encodings.js', `file://${ROOT}/`).href)});`,
      `createTokenCounter([${JSON.stringify(model)}]);`,
      "console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('cl100k'))));",
    ].join('\n');
    const loaded = async (model: string) => JSON.parse(await lastLineOf(script(model))) as string[];
    expect(await loaded('gpt-4o-mini')).toEqual([]);
    expect((await loaded('gpt-4')).length).toBeGreaterThan(0);
  });

  it('the gateway loads them only for the channels it runs (so the checks above can fail)', async () => {
    expect(await channelModulesLoadedBy('dist/src/gateway/index.js', 'void loaded;')).toEqual([]);
    const withTokens = [
      "const { createSilentLogger } = await import('./dist/src/log.js');",
      "await loaded.createChannels({ logger: createSilentLogger() }, { telegram: { token: '123456:secret-token' }, discord: { token: 'discord-token-0123456789abcdef' }, host: '127.0.0.1', keyPrefix: 'role-imports:' });",
    ].join('\n');
    const loaded = await channelModulesLoadedBy('dist/src/gateway/channels.js', withTokens);
    expect(loaded.some((path) => path.includes('/discord.js/'))).toBe(true);
    expect(loaded.some((path) => path.includes('/grammy/'))).toBe(true);
  });
});
