/**
 * The CLI in a second terminal next to a real `chatgate start --demo`, with no LLM option in its
 * environment (as after `npm start` on a fresh clone): `compact` and `doctor` use the running
 * deployment's LLM settings from the workers' heartbeats, not the defaults (OpenAI), and print no
 * JSON or stack. With nothing running and no endpoint configured, `compact` fails at once in one
 * clear line. The demo's own hints name `npx chatgate`, which works after `npm install`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { runChatgate, spawnChatgate, stopChatgate, type ChatgateProcess, type CliResult } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { pollUntil } from '../helpers/waits.js';

const SESSION = 'web:second-terminal';

describe('the CLI next to a running demo (real processes)', () => {
  let t: TestRedis;
  let demo: ChatgateProcess | undefined;

  /** Where the deployment is, and nothing about its LLM. */
  const env = (): Record<string, string> => ({ ...t.env });
  const expectQuiet = (result: CliResult) => {
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.stderr).not.toContain('{"level"');
    expect(result.stderr).not.toContain('"stack"');
  };
  const assistantTexts = async () => (await readTranscript(t.redis, sessionKeys(SESSION, t.keyPrefix), '-', '+', 100))
    .flatMap((entry) => (entry.type === 'message' && entry.message.role === 'assistant' && messageText(entry.message) ? [messageText(entry.message)] : []));

  beforeAll(async () => {
    t = createTestRedis();
    demo = spawnChatgate(['start', '--demo'], { ...env(), CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'warn', CHATGATE_DEMO_WORD_DELAY_MS: '0', CHATGATE_RATE_LIMIT_PER_MINUTE: '0' });
    const { origin } = await demo.ready();
    for (const text of ['hello there', 'tell me more']) {
      const response = await fetch(`${origin}/api/chat/second-terminal/messages`, { method: 'POST', headers: { 'content-type': 'application/json', origin }, body: JSON.stringify({ text, userName: 'ana' }) });
      expect(response.status).toBe(202);
      const replies = (await assistantTexts()).length;
      await pollUntil(async () => (await assistantTexts()).length > replies, { intervalMs: 100, timeoutMs: 60_000, what: 'the demo reply' });
    }
  }, 120_000);

  afterAll(async () => {
    await stopChatgate(demo);
    await t.cleanup();
  });

  it('the demo\'s hints name `npx chatgate`', async () => {
    const texts = (await assistantTexts()).join('\n');
    expect(texts).toContain('`npx chatgate sessions`');
    expect(texts).not.toMatch(/(?<!npx )`chatgate /);
  });

  it('`chatgate compact <session>` compacts with the demo model the deployment runs', async () => {
    const result = await runChatgate(['compact', SESSION], env());
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^${SESSION}: (compacted|pruned|fallback|noop), [\\d,]+ → [\\d,]+ tokens`, 'm'));
    expect(result.stderr).toMatch(/compacting web:second-terminal \(summary by chatgate-demo, the offline demo model, the LLM worker \S+ pid \d+ \(demo mode\) uses\)/);
    expect(result.stderr).not.toContain('openai.com');
    expectQuiet(result);
  }, 60_000);

  it('`chatgate doctor` checks the deployment\'s demo model and suggests nothing that runs already', async () => {
    const result = await runChatgate(['doctor'], env());
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ok\s+config\s+valid; the LLM settings are the running deployment's, as worker \S+ pid \d+ \(demo mode\) records them: model chatgate-demo, context window 8192 tokens/m);
    expect(result.stdout).toMatch(/^ok\s+llm\s+built-in demo model: .* model chatgate-demo answers/m);
    expect(result.stdout).not.toContain('api.openai.com');
    expect(result.stdout).not.toContain('start --demo');
    expectQuiet(result);
  }, 60_000);

  it('an explicit LLM option wins over the deployment\'s', async () => {
    const result = await runChatgate(['doctor', '--json'], { ...env(), OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
    const checks = (JSON.parse(result.stdout) as { checks: Array<{ name: string; status: string; detail: string }> }).checks;
    expect(checks.find((c) => c.name === 'llm')).toMatchObject({ status: 'FAIL', detail: expect.stringContaining('http://127.0.0.1:9/v1 is not reachable') });
  }, 60_000);

  it('with nothing running and no endpoint configured, `compact` fails at once in one clear line', async () => {
    await stopChatgate(demo);
    const result = await runChatgate(['compact', SESSION], env());
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([
      `chatgate: cannot compact ${SESSION}: no LLM endpoint is configured here and no chatgate worker is running to take its settings from; start chatgate (\`npm start\`) or set OPENAI_BASE_URL and OPENAI_API_KEY (or CHATGATE_DEMO=true), then run this again`,
    ]);
    expectQuiet(result);
  }, 60_000);
});
