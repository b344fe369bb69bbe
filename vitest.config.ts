import { defineConfig } from 'vitest/config';

// Three projects, one per test folder (and `shards`, below): `npm run test:unit` (pure, no Redis), `test:integration`
// (real Redis, fake platform servers) and `test:e2e` (whole roles, headless Chromium). `npm test` runs all three.
const SHARDED_FILES = [
  'test/integration/outbound-order.redis.test.ts', 'test/integration/worker-processes.redis.test.ts',
  'test/integration/turn-resume.redis.test.ts', 'test/e2e/gateway-crash-delivery.redis.test.ts',
];

export default defineConfig({
  test: {
    // Builds dist/ if the sources changed: the CLI processes tests spawn run compiled, as `chatgate` does.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at once (vitest's default for `run` is cores - 1: one on a 2-core machine): most files wait on
    // servers, child processes and timers rather than compute. VITEST_MAX_WORKERS overrides it.
    maxWorkers: 2,
    // A worker keeps its module cache from file to file (importing bullmq, openai and the tokenizer anew per file
    // cost about a second each): no test mocks modules or stubs globals, and every file closes what it starts.
    isolate: false,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'] } },
      // One Chromium for the run: the browser tests connect to it rather than each launching one.
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], globalSetup: ['test/global-setup.ts', 'test/browser-setup.ts'] } },
      // The ordering, exactly-once and crash tests again with the queues split into 4 shards.
      { extends: true, test: { name: 'shards', env: { CHATGATE_TEST_SHARDS: '4' }, include: SHARDED_FILES } },
    ],
  },
});
