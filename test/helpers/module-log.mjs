/* global process */
/**
 * `node --import ./test/helpers/module-log.mjs …`: appends the URL of every module the process
 * resolves (ES modules and their imports, one a line) to the file named by CHATGATE_MODULE_LOG,
 * so a test can check what a role loads (no tsx, no channel library in a worker). The hook runs on
 * Node's loader thread: the process it watches uses more memory than it would alone.
 */
import { register } from 'node:module';

if (process.env.CHATGATE_MODULE_LOG) {
  register('./module-log-hooks.mjs', import.meta.url, { data: { file: process.env.CHATGATE_MODULE_LOG } });
}
