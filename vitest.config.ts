import { defineConfig } from 'vitest/config';

// Three projects, one per test folder (and `shards`, below): `npm run test:unit` (pure, no Redis), `test:integration`
// (real Redis, fake platform servers) and `test:e2e` (whole roles, headless Chromium). `npm test` runs all three.
const SHARDED_FILES = [
  'test/integration/outbound-order.redis.test.ts', 'test/integration/worker-processes.redis.test.ts',
  'test/integration/turn-resume.redis.test.ts', 'test/e2e/gateway-crash-delivery.redis.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'] } },
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'] } },
      // The ordering, exactly-once and crash tests again with the queues split into 4 shards.
      { extends: true, test: { name: 'shards', env: { CHATGATE_TEST_SHARDS: '4' }, include: SHARDED_FILES } },
    ],
  },
});
