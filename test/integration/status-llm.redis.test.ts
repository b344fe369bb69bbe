/**
 * The LLM line of `chatgate status` when no worker has called the model yet: nothing configured is
 * said as such (no probe of OpenAI's default address with no key), the demo model counts as up.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildStatusReport } from '../../src/cli/status-report.js';
import { loadConfig } from '../../src/config.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

describe('status: the LLM line without model calls', () => {
  let t: TestRedis;
  beforeEach(() => {
    t = createTestRedis();
  });
  afterEach(async () => {
    await t.cleanup();
  });
  const env = (extra: Record<string, string>) => ({ REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, ...extra });
  const llmLine = async (extra: Record<string, string>) => {
    const progress: string[] = [];
    const report = await buildStatusReport(loadConfig(env(extra)), t.redis, (line) => progress.push(line));
    return { check: report.checks.find((c) => c.name === 'llm')!, progress };
  };

  it('no endpoint and no key: DOWN saying nothing is configured, with what to set, and no probe of the default address', async () => {
    const { check, progress } = await llmLine({});
    expect(check).toMatchObject({ status: 'down', detail: expect.stringContaining('no LLM endpoint is configured'), fix: expect.stringContaining('OPENAI_BASE_URL') });
    expect(progress.join('\n')).not.toContain('checking the LLM endpoint');
  });

  it('demo mode: the built-in demo model is up', async () => {
    const { check } = await llmLine({ CHATGATE_DEMO: 'true' });
    expect(check).toMatchObject({ status: 'ok', detail: expect.stringContaining('demo model') });
  });

  it('a configured endpoint that does not answer is probed and DOWN with the reason', async () => {
    const { check, progress } = await llmLine({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'sk-test' });
    expect(progress.join('\n')).toContain('checking the LLM endpoint http://127.0.0.1:9/v1');
    expect(check.status).toBe('down');
  });
});
