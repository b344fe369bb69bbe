#!/usr/bin/env node
/* global process, setTimeout */
// `chatgate` on PATH (npm link / npm install -g / npx): runs the compiled CLI, dist/src/cli.js.
// A dist/ that is missing or older than the sources is rebuilt first (under a second, one line on
// stderr); when it cannot be (a read-only install), the sources run through tsx, said in one line.
import { build, buildState, DIST } from '../scripts/build.mjs';

// As `node --enable-source-maps`: stack traces name the .ts lines. Applies to the modules loaded from here on.
process.setSourceMapsEnabled(true);
const { runCli } = await compiledCli().catch(sourceCli);
process.exitCode = await runCli(process.argv);
setTimeout(() => process.exit(process.exitCode), 200).unref();

/** The compiled CLI, rebuilt first when the sources changed since dist/ was built. */
async function compiledCli() {
  const state = buildState();
  if (!state.fresh) {
    const { files, ms } = await build();
    process.stderr.write(`chatgate: ${state.reason === 'missing' ? 'built' : 'rebuilt the outdated'} ${DIST} (${files} files, ${ms} ms)\n`);
  }
  return import('../dist/src/cli.js');
}

/** The TypeScript sources through tsx (a development dependency), when dist/ could not be built. */
async function sourceCli(err) {
  process.stderr.write(`chatgate: could not build ${DIST} (${err instanceof Error ? err.message : String(err)}); running the sources through tsx instead — run \`npm run build\` where dist/ is writable to run compiled\n`);
  const { register } = await import('tsx/esm/api');
  register();
  return import('../src/cli.ts');
}
