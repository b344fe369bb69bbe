import { defineConfig } from 'vitest/config';

// Three projects, one per test folder: `npm run test:unit` (pure, no Redis), `test:integration`
// (real Redis, fake platform servers) and `test:e2e` (whole roles, headless Chromium). `npm test` runs all three.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'] } },
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'] } },
    ],
  },
});
