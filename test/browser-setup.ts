import type { TestProject } from 'vitest/node';
import { launchChromiumServer } from './helpers/browser.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where the run's shared Chromium listens (unset when the e2e project's setup did not run). */
    chromiumWsEndpoint?: string;
  }
}

/**
 * The e2e project's global setup: one headless Chromium for the whole run, which the browser tests
 * connect to (`launchChromium` in helpers/browser.ts) instead of each launching its own (a launch and
 * close cost ~2–3 s). When it cannot start, nothing is shared: each browser test launches its own and
 * fails with the reason, the other e2e tests run. @returns the teardown, which closes it.
 */
export default async function startSharedChromium(project: TestProject): Promise<() => Promise<void>> {
  const server = await launchChromiumServer().catch(() => null);
  if (server) project.provide('chromiumWsEndpoint', server.wsEndpoint());
  return async () => { await server?.close(); };
}
