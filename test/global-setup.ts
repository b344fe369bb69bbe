import { compiledCli } from './helpers/cli-process.js';

/**
 * vitest's global setup: builds dist/ when the sources changed since it was built, once before the
 * files run, so the test processes that spawn the compiled CLI find it fresh instead of each
 * building it at their first spawn. @throws Error when the build fails.
 */
export default function buildCompiledCli(): void {
  compiledCli();
}
