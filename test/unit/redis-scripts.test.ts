import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { assembleScript, SCRIPT_FOLDERS, SCRIPTS } from '../../src/redis/scripts.js';

const luaFiles = (dir: URL): string[] => readdirSync(dir).filter((file) => file.endsWith('.lua')).sort();

describe('Lua scripts (src/redis/scripts, src/outbound/scripts)', () => {
  it('loads every .lua file of each script folder, each named <name>-<numKeys>.lua', () => {
    const files = SCRIPT_FOLDERS.flatMap(({ dir }) => luaFiles(dir)).sort();
    expect(Object.values(SCRIPTS).map((script) => script.file).sort()).toEqual(files);
    for (const { dir, files: named } of SCRIPT_FOLDERS) expect(Object.values(named).sort()).toEqual(luaFiles(dir));
    for (const file of files) expect(file).toMatch(/^[a-z]+(-[a-z]+)*-\d+\.lua$/);
  });

  it.each(Object.values(SCRIPTS).map((script) => [script.file, script] as const))('%s opens with a header listing its KEYS, ARGV and output', (_file, script) => {
    const header = /^--\[\[\n([\s\S]*?)\n\]\]\n/.exec(script.lua)?.[1];
    expect(header, 'a --[[ ... ]] header first').toBeDefined();
    const documentedKeys = [...header!.matchAll(/^ {4}KEYS\[(\d+)\]/gm)].map((match) => Number(match[1]));
    expect(documentedKeys).toEqual(Array.from({ length: script.numberOfKeys }, (_, i) => i + 1));
    expect(header).toMatch(/^ {2}Output:\n {4}\S/m);
    // Every argument the body reads is documented.
    const body = script.lua.slice(header!.length);
    for (const [, index] of body.matchAll(/ARGV\[(\d+)\]/g)) expect(header).toContain(`ARGV[${index}]`);
    expect(Math.max(0, ...[...body.matchAll(/KEYS\[(\d+)\]/g)].map((match) => Number(match[1])))).toBeLessThanOrEqual(script.numberOfKeys);
  });

  it('reads the same files a deployment ships (the Dockerfile copies src/)', () => {
    expect(readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8')).toMatch(/^COPY .*\bsrc \.\/src$/m);
  });
});

describe('assembleScript (--- @include "<name>")', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A scripts folder with `files` (`includes/<name>.lua` for includes); @returns its URL. */
  function folder(files: Record<string, string>): URL {
    const dir = mkdtempSync(join(tmpdir(), 'chatgate-lua-'));
    dirs.push(dir);
    for (const [name, text] of Object.entries(files)) writeIn(dir, name, text);
    return pathToFileURL(`${dir}/`);
  }

  function assemble(dir: URL): string {
    return assembleScript('main-1.lua', dir, new URL('includes/', dir));
  }

  it('puts the include where its line is, after the header', () => {
    const dir = folder({ 'main-1.lua': '--[[\n  header\n]]\n--- @include "twice"\nreturn twice(2)\n', 'includes/twice.lua': 'local function twice(n) return 2 * n end\n' });
    expect(assemble(dir)).toBe('--[[\n  header\n]]\nlocal function twice(n) return 2 * n end\nreturn twice(2)\n');
  });

  it('includes an include pulled in twice (directly and through another) once', () => {
    const dir = folder({
      'main-1.lua': '--- @include "base"\n--- @include "more"\n--- @include "base"\nreturn 1\n',
      'includes/base.lua': 'local base = 1\n',
      'includes/more.lua': '--- @include "base"\nlocal more = base + 1\n',
    });
    const lua = assemble(dir);
    expect(lua.match(/local base = 1/g)).toHaveLength(1);
    expect(lua.indexOf('local base = 1')).toBeLessThan(lua.indexOf('local more'));
    expect(lua).not.toContain('@include');
  });

  it('refuses a missing include, naming the script and the file it looked for', () => {
    const dir = folder({ 'main-1.lua': '--- @include "nowhere"\nreturn 1\n', 'includes/other.lua': '' });
    expect(() => assemble(dir)).toThrow(/script main-1\.lua includes "nowhere", but .*includes[\\/]nowhere\.lua does not exist/);
  });

  it('writes the script\'s name where an include names it, and refuses an unnamed script', () => {
    const dir = folder({ 'main-1.lua': '--- @include "named"\nreturn 1\n', 'includes/named.lua': "local me = '@script'\n" });
    expect(assembleScript('main-1.lua', dir, new URL('includes/', dir), 'mainScript')).toBe("local me = 'mainScript'\nreturn 1\n");
    expect(() => assemble(dir)).toThrow(/script main-1\.lua: include "named" names the script, but no script name was given/);
  });

  it('refuses an include line of another form', () => {
    const dir = folder({ 'main-1.lua': '--- @include nowhere\nreturn 1\n' });
    expect(() => assemble(dir)).toThrow(/script main-1\.lua: malformed include line '--- @include nowhere'/);
  });

  it('leaves no include line in chatgate\'s scripts, and each include once', () => {
    for (const script of Object.values(SCRIPTS)) {
      expect(script.lua, script.file).not.toMatch(/^--- @include/m);
      for (const [, name] of script.lua.matchAll(/^local function (\w+)/gm)) expect(script.lua.split(`local function ${name}(`), `${script.file}: ${name}`).toHaveLength(2);
    }
  });
});

function writeIn(dir: string, name: string, text: string): void {
  const path = join(dir, name);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
