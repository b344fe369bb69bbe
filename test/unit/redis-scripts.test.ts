import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SCRIPT_FOLDERS, SCRIPTS } from '../../src/redis/scripts.js';

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
