#!/usr/bin/env node
/* global process, console, performance, URL */
/**
 * scripts/build.mjs: compiles chatgate to JavaScript so its roles run on plain `node` (tsx's loader
 * thread costs ~55 MiB a process). esbuild transpiles every module of src/, channels/ and workers/
 * one file to one file (no bundling: node_modules stay external, the layout is kept) into dist/,
 * with source maps, and copies the files the code reads at run time (the Lua scripts, the web
 * chat page). tsc stays the type checker (`npm run typecheck`).
 *
 * `dist/build-info.json` records a digest of everything the build read; a dist/ whose digest is
 * not the sources' is stale and never runs silently (bin/chatgate.js and `npm start` rebuild it).
 *
 *   node scripts/build.mjs               build into dist/
 *   node scripts/build.mjs --if-stale    build only when the sources changed since the last build
 *   node scripts/build.mjs --check       exit 1 (and say what to run) when dist/ is stale
 *   node scripts/build.mjs --out <dir>   build into <dir> (inside the project, so node_modules resolves)
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's root folder (where package.json is). */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Where `npm run build` writes, and what bin/chatgate.js and `npm start` run. */
export const DIST = join(ROOT, 'dist');
/** The folders compiled: everything `src/cli.ts` and `src/index.ts` reach lives in them. */
const SOURCE_DIRS = ['src', 'channels', 'workers'];
/** Read by the build besides the source folders: a change to any of them makes dist/ stale. */
const BUILD_INPUTS = ['package.json', 'tsconfig.json', 'scripts/build.mjs'];
const INFO_FILE = 'build-info.json';
/** Not needed at run time: documentation stays in the source tree. */
const NOT_COPIED = /\.(md|ts)$/;

/**
 * Digest of every file the build reads (source folders, package.json, tsconfig, this script), by
 * path and content: any edit, added or removed file changes it. A few ms for the whole tree.
 */
export function sourceDigest(root = ROOT) {
  const hash = createHash('sha256');
  for (const file of [...BUILD_INPUTS, ...SOURCE_DIRS.flatMap((dir) => listFiles(root, dir))]) {
    hash.update(`${file}\0`).update(readFileSync(join(root, file))).update('\0');
  }
  return hash.digest('hex');
}

/**
 * Whether `outDir` holds a complete build of the current sources. `reason` says why not
 * (`missing`, `stale`), for the line the caller prints.
 */
export function buildState(root = ROOT, outDir = join(root, 'dist')) {
  let info;
  try {
    info = JSON.parse(readFileSync(join(outDir, INFO_FILE), 'utf8'));
  } catch {
    return { fresh: false, reason: 'missing' };
  }
  return info.digest === sourceDigest(root) ? { fresh: true } : { fresh: false, reason: 'stale' };
}

/**
 * Compiles the source folders of `root` into `outDir` and copies their run-time assets. Each file
 * is written atomically (temporary file, then rename) and `build-info.json` last, so a process
 * started from the old dist/ meanwhile, or a build that stops halfway, never reads a torn file;
 * files of removed sources are deleted. @returns the number of files written and the time, ms.
 * @throws the esbuild error (with file and line) when a module does not compile.
 */
export async function build(root = ROOT, outDir = join(root, 'dist')) {
  const started = performance.now();
  const digest = sourceDigest(root);
  const { build: esbuild } = await import('esbuild');
  const files = SOURCE_DIRS.flatMap((dir) => listFiles(root, dir));
  const result = await esbuild({
    absWorkingDir: root,
    entryPoints: files.filter((file) => file.endsWith('.ts')),
    outdir: outDir,
    outbase: '.',
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Stack traces name the .ts lines (node --enable-source-maps); the maps point at the sources
    // instead of carrying them, so each process keeps less in memory.
    sourcemap: 'linked',
    sourcesContent: false,
    write: false,
    logLevel: 'silent',
  });
  const outputs = new Map(result.outputFiles.map((out) => [out.path, out.contents]));
  for (const file of files.filter((name) => !NOT_COPIED.test(name))) outputs.set(join(outDir, file), readFileSync(join(root, file)));
  // dist/ is an ES module tree of its own, and src/cli/context.ts reads the version from the package.json two folders up.
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  outputs.set(join(outDir, 'package.json'), `${JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: 'module' }, null, 2)}\n`);
  for (const [path, contents] of outputs) writeAtomically(path, contents);
  removeOthers(outDir, new Set([...outputs.keys(), join(outDir, INFO_FILE)]));
  writeAtomically(join(outDir, INFO_FILE), `${JSON.stringify({ digest, builtAt: new Date().toISOString() }, null, 2)}\n`);
  return { files: outputs.size, ms: Math.round(performance.now() - started) };
}

/** Files under `root/dir`, as paths relative to `root` with `/`, sorted (the digest depends on the order). */
function listFiles(root, dir) {
  const entries = readdirSync(join(root, dir), { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile())
    .map((entry) => relative(root, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
}

function writeAtomically(path, contents) {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, path);
}

/** Deletes the files of `outDir` not in `keep` (left by sources since removed). */
function removeOthers(outDir, keep) {
  for (const entry of readdirSync(outDir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isFile() && !keep.has(path) && !path.endsWith('.tmp')) rmSync(path);
  }
}

async function main(args) {
  const outAt = args.indexOf('--out');
  const outDir = outAt >= 0 ? resolve(args[outAt + 1] ?? '') : DIST;
  if (args.includes('--check') || args.includes('--if-stale')) {
    const state = buildState(ROOT, outDir);
    if (state.fresh) return 0;
    if (args.includes('--check')) {
      console.error(`chatgate: ${relative(process.cwd(), outDir) || '.'} is ${state.reason === 'missing' ? 'not built' : 'older than the sources'}: run \`npm run build\``);
      return 1;
    }
  }
  const { files, ms } = await build(ROOT, outDir);
  console.error(`chatgate: built ${relative(process.cwd(), outDir) || '.'} (${files} files, ${ms} ms)`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2)).catch((err) => {
    console.error(`chatgate: the build failed: ${err.message}`);
    return 1;
  });
}
