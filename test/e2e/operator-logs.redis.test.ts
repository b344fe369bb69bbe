/**
 * What an operator reads: `chatgate start` with its stdout piped writes JSON lines (the
 * `auto` format), a real turn's lines never repeat a key (even at debug, where every component
 * logs), and a delivered reply is one info line. The last line before a crash is on the output
 * in both formats.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { compiledCli, spawnChatgate, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { startModelsFront } from '../helpers/cli-worker.js';
import { duplicateJsonKeys } from '../helpers/json-keys.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Runs a script that logs one line in `format` through the compiled logger and exits at once with code 3 (a crash). */
function crashAfterOneLine(format: 'json' | 'pretty'): Promise<{ code: number | null; stdout: string }> {
  compiledCli();
  const script = [
    "import { createLogger } from './dist/src/log.js';",
    `const log = createLogger({ format: '${format}' });`,
    "log.fatal({ reason: 'disk full' }, 'the last line before the crash');",
    'process.exit(3);',
  ].join('\n');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout }));
  });
}

describe('operator logs', () => {
  let t: TestRedis | undefined;
  let proc: ChatgateProcess | undefined;
  let llm: FakeOpenAI | undefined;
  let front: { baseURL: string; close(): Promise<void> } | undefined;
  afterEach(async () => {
    await stopChatgate(proc);
    await front?.close();
    await llm?.close();
    await t?.cleanup();
    t = undefined;
  });

  it('a piped run writes JSON lines with no repeated key, and one info line per delivered reply', async () => {
    const redis = createTestRedis();
    t = redis;
    // The first model call is rate limited: the model client's retry line is logged under the worker's turn logger.
    llm = await startFakeOpenAI((request) => (request.index === 0 ? { status: 429, headers: { 'retry-after-ms': '1' } } : { content: 'hello there' }));
    front = await startModelsFront(llm.baseURL);
    proc = spawnChatgate(['start'], {
      OPENAI_BASE_URL: front.baseURL, OPENAI_API_KEY: 'test-key', CHATGATE_MODEL: 'gpt-4o-mini', CHATGATE_CONTEXT_WINDOW: '16000',
      REDIS_URL: redis.url, CHATGATE_KEY_PREFIX: redis.keyPrefix, CHATGATE_QUEUE_PREFIX: redis.queuePrefix, CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'debug',
    });
    const url = (await proc.waitFor('stderr', /^Web chat: +(http:\/\/\S+)\/chat$/m))[1];
    for (const [k, text] of ['hello', 'and a second one'].entries()) {
      const posted = await fetch(`${url}/api/chat/logs1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, clientMessageId: `m${k}`, userId: 'u1' }) });
      expect(posted.status).toBeLessThan(300);
      await proc.waitFor('stdout', new RegExp(`("msg":"reply delivered"[\\s\\S]*){${k + 1}}`));
    }
    await stopChatgate(proc);
    const logLines = proc.stdout.text.split('\n').filter((line) => line.startsWith('{'));
    // stdout is JSON lines and nothing else: the ready banner and progress lines are on stderr.
    const other = proc.stdout.text.split('\n').filter((line) => line !== '' && !line.startsWith('{'));
    expect(other).toEqual([]);
    expect(proc.stderr.text).toMatch(/^Press Ctrl\+C to stop\.$/m);
    expect(logLines.length).toBeGreaterThan(10);
    for (const line of logLines) expect(duplicateJsonKeys(line), line).toEqual([]);
    const parsed = logLines.map((line) => JSON.parse(line) as { level: number; msg: string; sessionId?: string; component?: string });
    // The worker's and the model client's lines of the turn are there, with the turn's keys bound once…
    expect(parsed.some((line) => line.level === 20 && line.sessionId === 'web:logs1' && line.msg === 'turn committed')).toBe(true);
    expect(parsed.find((line) => line.msg === 'llm call failed, retrying')).toMatchObject({ component: 'llm', sessionId: 'web:logs1', level: 40 });
    // …and at info a session's lines are its delivered replies, one each.
    const info = parsed.filter((line) => line.level === 30 && line.sessionId === 'web:logs1');
    expect(info.map((line) => line.msg)).toEqual(['reply delivered', 'reply delivered']);
    expect(info[0]).toMatchObject({ component: 'outbound', channel: 'web', kind: 'reply', chunks: 1, sent: 1, attempt: 1 });
  });

  it.each(['json', 'pretty'] as const)('the last %s line before a crash is written', async (format) => {
    const { code, stdout } = await crashAfterOneLine(format);
    expect(code).toBe(3);
    expect(stdout).toContain('the last line before the crash');
    expect(stdout).toContain('disk full');
    if (format === 'json') expect(JSON.parse(stdout.trim())).toMatchObject({ level: 60 });
    else expect(stdout).toMatch(/FATAL: the last line before the crash/);
  });
});
