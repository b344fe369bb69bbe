#!/usr/bin/env node
/* global process, setTimeout */
// `chatgate` on PATH (npm link / npm install -g / npx): loads tsx, then runs src/cli.ts.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli.ts');
process.exitCode = await runCli(process.argv);
setTimeout(() => process.exit(process.exitCode), 200).unref();
