import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/core/messages.js';
import { renderConfigTable } from '../../src/config.js';
import { SUMMARIZER_MARK } from '../../src/llm/summarizer.js';
import { acquireLease, releaseLease } from '../../src/redis/lease.js';
import { createSessionStore, toEntry } from '../../src/redis/session-store.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { callUsageDelta, readUsage } from '../../src/redis/usage.js';
import { closedPort, runChatgate, type CliResult } from '../helpers/cli-process.js';
import { deleteMatching } from '../helpers/redis.js';
import { TokenCounter } from '../../src/core/tokens.js';

const TOKENS = new TokenCounter();

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const T0 = Date.UTC(2026, 0, 15, 9, 0, 0);
const MODEL = 'test-model';
const WINDOW = 4096;
const TELEGRAM_TOKEN = '123456:GOOD-token';

/** `chatgate …args` with `env` (nothing inherited but PATH and HOME; no ./.env). */
const runCli = runChatgate;

/** A fake OpenAI-compatible endpoint (GET /v1/models, POST /v1/chat/completions) and Telegram getMe. */
async function startFakeApis(): Promise<{ url: string; completions: ChatMessage[][]; close(): Promise<void> }> {
  const completions: ChatMessage[][] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (chunk: Buffer) => { body += chunk.toString(); });
    req.on('end', () => {
      const send = (status: number, json: unknown) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(json)); };
      if (req.method === 'GET' && req.url === '/v1/models') return send(200, { object: 'list', data: [{ id: MODEL, object: 'model' }] });
      if (req.method === 'POST' && req.url === '/v1/chat/completions') {
        const messages = (JSON.parse(body) as { messages: ChatMessage[] }).messages;
        completions.push(messages);
        const summary = typeof messages[0].content === 'string' && messages[0].content.startsWith(SUMMARIZER_MARK);
        const content = summary ? '## Goal\nTrack order ORD-48213-XK.\n## Next steps\nConfirm delivery.' : 'ok';
        return send(200, { id: 'x', object: 'chat.completion', created: 0, model: MODEL, choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 } });
      }
      if (req.url === `/bot${TELEGRAM_TOKEN}/getMe`) return send(200, { ok: true, result: { id: 123456, is_bot: true, username: 'chatgate_test_bot' } });
      if (req.url?.startsWith('/bot')) return send(401, { ok: false, error_code: 401, description: 'Unauthorized' });
      return send(404, { error: 'not found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, completions, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

describe('chatgate CLI against real Redis', () => {
  const id = randomBytes(5).toString('hex');
  const keyPrefix = `cgtest-cli-${id}:`;
  const queuePrefix = `{cgtestcli${id}}`;
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const stateDir = mkdtempSync(join(tmpdir(), 'chatgate-cli-'));
  let fake: Awaited<ReturnType<typeof startFakeApis>>;
  let env: Record<string, string>;
  const store = () => createSessionStore({ redis }, { keyPrefix });

  /** Seeds a session of `turns` user/assistant pairs whose last call reported `promptTokens`. */
  async function seed(sessionId: string, turns: number, promptTokens: number, atMs: number): Promise<void> {
    const s = createSessionStore({ redis }, { keyPrefix, now: () => atMs });
    const fence = (await acquireLease(redis, s.keys(sessionId)))!;
    const entries = Array.from({ length: turns }, (_, k) => [
      toEntry({ role: 'user', content: `Question ${k + 1}: where is my order ORD-48213-XK? It was supposed to arrive on 2026-01-${String(10 + (k % 9)).padStart(2, '0')} and the tracking page at https://example.com/track/48213 shows nothing new.` }, TOKENS),
      toEntry({ role: 'assistant', content: `Answer ${k + 1}: the order ORD-48213-XK left the warehouse; I will keep checking the carrier and tell you as soon as the status changes. Reference #4471 is attached to your ticket.` }, TOKENS),
    ]).flat();
    await s.commit(sessionId, {
      expectedVersion: 0, fence, projection: { append: entries },
      transcript: entries.map((e) => ({ type: 'message' as const, message: e.message, tokens: e.tokens, atMs })),
      usage: callUsageDelta(MODEL, { promptTokens, completionTokens: 60 * turns, cachedTokens: 0 }, WINDOW),
      meta: { route: { channel: sessionId.split(':')[0] as 'web', chatId: sessionId.split(':')[1] }, lastPromptTokens: promptTokens, appendedTokensSince: 0, overheadTokens: 200 },
      finishTurn: true,
    });
    await releaseLease(redis, s.keys(sessionId), fence);
  }

  beforeAll(async () => {
    fake = await startFakeApis();
    env = {
      REDIS_URL: redisUrl, CHATGATE_KEY_PREFIX: keyPrefix, CHATGATE_QUEUE_PREFIX: queuePrefix, CHATGATE_STATE_DIR: stateDir,
      OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_API_KEY: 'test-key', CHATGATE_MODEL: MODEL, CHATGATE_CONTEXT_WINDOW: String(WINDOW),
      CHATGATE_RESERVED_OUTPUT_TOKENS: '0', CHATGATE_LOG_LEVEL: 'warn',
    };
    await seed('telegram:100', 12, 3000, T0 + 3000);
    await seed('web:abc', 1, 500, T0 + 5000);
    await seed('discord:200', 2, 1500, T0 + 1000);
  });

  afterAll(async () => {
    await deleteMatching(redis, `${keyPrefix}*`);
    await deleteMatching(redis, `${queuePrefix}*`);
    redis.disconnect();
    await fake.close();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('sessions: a table by last activity or context fill, JSON, and a limit', async () => {
    const [table, byFill, json, limited] = await Promise.all([
      runCli(['sessions'], env), runCli(['sessions', '--sort', 'fill'], env), runCli(['sessions', '--json'], env), runCli(['sessions', '--limit', '1'], env),
    ]);
    expect(table.code).toBe(0);
    const rows = (r: CliResult) => r.stdout.trim().split('\n').slice(1).map((line) => line.split(/\s+/)[0]);
    expect(table.stdout.split('\n')[0]).toMatch(/^session\s+channel\s+model\s+messages\s+fill\s+window\s+tokens in\s+tokens out\s+cost\s+compactions/);
    expect(rows(table)).toEqual(['web:abc', 'telegram:100', 'discord:200']);
    expect(table.stdout).toMatch(/telegram:100\s+telegram\s+test-model\s+24\s+73\.2%\s+4,096\s+3,000\s+720/);
    expect(rows(byFill)).toEqual(['telegram:100', 'discord:200', 'web:abc']);
    const page = JSON.parse(json.stdout) as { total: number; items: Array<{ id: string; messages: number; promptTokens: number }> };
    expect(page.total).toBe(3);
    expect(page.items.find((row) => row.id === 'telegram:100')).toMatchObject({ messages: 24, promptTokens: 3000 });
    expect(rows(limited)).toEqual(['web:abc']);
    expect(limited.stderr).toContain('showing 1 of 3 sessions');
  });

  it('usage: the ledger of one session as text and JSON; an unknown session exits 1', async () => {
    const [text, json, unknown] = await Promise.all([
      runCli(['usage', 'telegram:100'], env), runCli(['usage', 'telegram:100', '--json'], env), runCli(['usage', 'web:nobody'], env),
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/context\s+3,000 of 4,096 tokens \(73\.2%; window 4,096\); compaction at 50% \(2,048\), hygiene at 85% \(3,481\)/);
    expect(text.stdout).toMatch(/model calls\s+1/);
    expect(JSON.parse(json.stdout)).toMatchObject({ session: { id: 'telegram:100', channel: 'telegram' }, ledger: { promptTokens: 3000, completionTokens: 720, calls: 1 } });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no session web:nobody');
  });

  it('transcript: every message as text and as JSONL', async () => {
    const [text, jsonl, unknown] = await Promise.all([
      runCli(['transcript', 'discord:200'], env), runCli(['transcript', 'discord:200', '--jsonl'], env), runCli(['transcript', 'discord:200x'], env),
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^2026-01-15 09:00:01 {2}user: Question 1: where is my order ORD-48213-XK\?/m);
    const entries = jsonl.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; message: ChatMessage; id: string });
    expect(entries.map((e) => e.message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(entries[0].id).toMatch(/^\d+-\d+$/);
    expect(unknown.code).toBe(1);
  });

  it('compact: a manual compaction under the lease, committed like the worker’s, with before → after tokens', async () => {
    const before = await store().load('telegram:100');
    const result = await runCli(['compact', 'telegram:100', '--focus', 'the delivery date'], env);
    expect(result.stderr).toContain('compacting telegram:100');
    expect(result.code).toBe(0);
    const match = /^telegram:100: compacted, ([\d,]+) → ([\d,]+) tokens/m.exec(result.stdout);
    expect(match).not.toBeNull();
    const [tokensBefore, tokensAfter] = [match![1]!, match![2]!].map((n) => Number(n.replace(/,/g, '')));
    expect(tokensAfter).toBeLessThan(tokensBefore!);
    const summariserCall = fake.completions.find((messages) => String(messages[0].content).startsWith(SUMMARIZER_MARK));
    expect(JSON.stringify(summariserCall)).toContain('Focus especially on: the delivery date');
    const after = await store().load('telegram:100');
    expect(after.entries.length).toBeLessThan(before.entries.length);
    expect(after.meta.version).toBe(before.meta.version + 1);
    expect(after.meta.compaction).toMatchObject({ compactions: 1, lastOutcome: 'compacted' });
    const keys = store().keys('telegram:100');
    const last = (await readTranscript(redis, keys)).at(-1)!;
    expect(last).toMatchObject({ type: 'compaction', layer: 'manual', outcome: 'compacted' });
    expect((await readUsage(redis, keys)).compactions).toEqual({ 'manual:compacted': 1 });
    expect(await redis.exists(keys.lease)).toBe(0);
  });

  it('compact: refuses with exit 1 while a worker holds the session', async () => {
    const keys = store().keys('web:abc');
    const fence = (await acquireLease(redis, keys, 60_000))!;
    try {
      const result = await runCli(['compact', 'web:abc'], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('web:abc is busy');
    } finally {
      await releaseLease(redis, keys, fence);
    }
  });

  it('reset: an empty projection and a fresh compaction state; the transcript keeps everything', async () => {
    const keys = store().keys('discord:200');
    const transcriptBefore = await redis.xlen(keys.transcript);
    const result = await runCli(['reset', 'discord:200'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('discord:200: reset — 4 messages removed');
    const after = await store().load('discord:200');
    expect(after.entries).toEqual([]);
    expect(after.meta).toMatchObject({ projectionTokens: 0, lastPromptTokens: 0 });
    expect(after.meta.compaction).toMatchObject({ compactions: 0, paused: false, lastOutcome: null });
    expect(await redis.xlen(keys.transcript)).toBe(transcriptBefore + 1);
    expect((await readTranscript(redis, keys)).at(-1)).toMatchObject({ type: 'reset', removedMessages: 4 });
    expect((await readTranscript(redis, keys)).slice(0, 4).map((e) => e.type)).toEqual(['message', 'message', 'message', 'message']);
  });

  it('doctor: every check ok against a fake LLM that is up and a valid bot token', async () => {
    const result = await runCli(['doctor', '--telegram-api-root', fake.url], { ...env, TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ok\s+config\s+valid: model test-model/m);
    expect(result.stdout).toMatch(/^ok\s+redis\s+Redis \d+\.\d+/m);
    expect(result.stdout).toMatch(/^ok\s+queues\s+turns: 0 waiting/m);
    expect(result.stdout).toMatch(/^ok\s+llm\s+.*model test-model answers/m);
    expect(result.stdout).toMatch(/^ok\s+telegram\s+token valid: bot @chatgate_test_bot/m);
    expect(result.stdout).toMatch(/^skip\s+discord/m);
    expect(result.stdout).not.toContain('GOOD-token');
  });

  it('doctor: checks the built-in demo model in demo mode', async () => {
    const result = await runCli(['doctor'], { ...env, CHATGATE_DEMO: 'true', CHATGATE_MODEL: 'chatgate-demo', CHATGATE_CONTEXT_WINDOW: '', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' });
    expect(result.stdout).toMatch(/^ok\s+llm\s+built-in demo model: .*model chatgate-demo answers \(\d+ tokens\)/m);
    expect(result.code).toBe(0);
  });

  it('doctor: FAIL lines with a fix when the LLM is down and the bot token is rejected; exit 1', async () => {
    const down = `http://127.0.0.1:${await closedPort()}/v1`;
    const result = await runCli(['doctor', '--telegram-api-root', fake.url], { ...env, OPENAI_BASE_URL: down, TELEGRAM_BOT_TOKEN: '654321:BAD-token' });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^ok\s+redis/m);
    expect(result.stdout).toMatch(/^FAIL\s+llm\s+.*is not reachable/m);
    expect(result.stdout).toMatch(/fix: Set OPENAI_BASE_URL/);
    expect(result.stdout).toMatch(/^FAIL\s+telegram\s+TELEGRAM_BOT_TOKEN was rejected \(HTTP 401/m);
    expect(result.stdout).not.toContain('BAD-token');
  });

  it('start: exits 1 with what to set when the LLM endpoint does not answer', async () => {
    const down = `http://127.0.0.1:${await closedPort()}/v1`;
    const result = await runCli(['start'], { ...env, OPENAI_BASE_URL: down, CHATGATE_HTTP_PORT: '0' });
    expect(result.code).toBe(1);
    // The code and what it means: a newcomer need not look ECONNREFUSED up.
    expect(result.stderr).toContain(`chatgate: cannot use the LLM endpoint: ${down} is not reachable (ECONNREFUSED: nothing listens on that port).`);
    expect(result.stderr).toMatch(/OPENAI_BASE_URL.*OPENAI_API_KEY.*CHATGATE_MODEL.*chatgate start --demo/s);
  });

  it('usage errors exit 2; invalid configuration exits 1 naming the option', async () => {
    const [unknownCommand, badSort, badLimit, missingArg, badConfig] = await Promise.all([
      runCli(['frobnicate'], env), runCli(['sessions', '--sort', 'size'], env), runCli(['sessions', '--limit', 'many'], env),
      runCli(['usage', '--by', 'team'], env), runCli(['sessions'], { ...env, CHATGATE_THRESHOLD: '1.5' }),
    ]);
    for (const r of [unknownCommand, badSort, badLimit, missingArg]) expect(r.code).toBe(2);
    expect(badSort.stderr).toContain('Allowed choices are activity, fill');
    expect(missingArg.stderr).toContain('Allowed choices are user, chat, channel, model');
    // Each points at the help of the command that was given.
    expect(missingArg.stderr).toContain('(run `chatgate usage --help` for its options)');
    expect(badLimit.stderr).toContain('(run `chatgate sessions --help` for its options)');
    expect(unknownCommand.stderr).toContain('(run `chatgate --help` for the commands)');
    expect(badConfig.code).toBe(1);
    expect(badConfig.stderr).toContain('`CHATGATE_THRESHOLD` must be a number in (0, 1) (got 1.5)');
  });
});

describe('docs/operating.md', () => {
  it('lists every option as renderConfigTable() renders it', () => {
    expect(readFileSync(join(ROOT, 'docs/operating.md'), 'utf8')).toContain(renderConfigTable());
  });
});
