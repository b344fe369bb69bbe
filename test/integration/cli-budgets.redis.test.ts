/**
 * `chatgate budgets list | set | reset` and `chatgate compact` under a used-up budget, as real
 * processes against real Redis.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBudgetLedger, type BudgetScope } from '../../src/budget/ledger.js';
import { NO_BUDGETS } from '../../src/core/budget.js';
import { TokenCounter } from '../../src/core/tokens.js';
import { budgetKeys } from '../../src/redis/keys.js';
import { acquireLease, releaseLease } from '../../src/redis/lease.js';
import { createSessionStore, toEntry } from '../../src/redis/session-store.js';
import { runCli } from '../../src/cli.js';
import type { CliIo } from '../../src/cli/context.js';
import { runChatgate } from '../helpers/cli-process.js';
import { deleteMatching } from '../helpers/redis.js';

const MODEL = 'test-model';

describe('chatgate budgets', () => {
  const id = randomBytes(5).toString('hex');
  const keyPrefix = `cgtest-budgets-${id}:`;
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  let completions = 0;
  let server: Server;
  let env: Record<string, string>;
  /** `chatgate budgets …` as a process. */
  const run = (args: string[], extra: Record<string, string> = {}) => runChatgate(['budgets', ...args], { ...env, ...extra });
  /** `chatgate budgets …` in this process (the same program; for the many cases of bad input). */
  const runHere = async (args: string[], extra: Record<string, string> = {}) => {
    const out: string[] = [];
    const err: string[] = [];
    const io: CliIo = { out: (text) => out.push(text), err: (text) => err.push(text), env: { ...env, ...extra } };
    const code = await runCli(['node', 'chatgate', 'budgets', ...args], { io });
    return { code, stdout: out.join('\n'), stderr: err.join('\n') };
  };
  const spend = async (scope: BudgetScope, used: { micro?: number; tokens: number }) => {
    const ledger = createBudgetLedger(redis, { keyPrefix, settings: NO_BUDGETS });
    const r = await ledger.reserve(scope, { tokens: 0 });
    if (!('id' in r)) throw new Error('refused');
    await ledger.settle(scope, r.id, used);
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/v1/chat/completions') completions++;
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'no model call was expected' } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    env = {
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', CHATGATE_KEY_PREFIX: keyPrefix, CHATGATE_QUEUE_PREFIX: `{cgtestb${id}}`, CHATGATE_LOG_LEVEL: 'warn',
      OPENAI_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, OPENAI_API_KEY: 'k', CHATGATE_MODEL: MODEL, CHATGATE_CONTEXT_WINDOW: '4096', CHATGATE_RESERVED_OUTPUT_TOKENS: '0',
    };
  });

  afterAll(async () => {
    await deleteMatching(redis, `${keyPrefix}*`);
    redis.disconnect();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('lists what every limit has used and has left, sets a user\'s limits (stored, versioned) and resets them', { timeout: 180_000 }, async () => {
    const limits = { CHATGATE_BUDGET_USER_DAILY_USD: '2', CHATGATE_BUDGET_DEPLOYMENT_MONTHLY_TOKENS: '1000000' };
    expect((await runHere(['list'])).stdout).toContain('No budget limit is set');
    await spend({ user: 'telegram:42', chat: 'telegram:42' }, { micro: 500_000, tokens: 4000 });
    const listed = await run(['list', '--json'], limits);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual({
      limits: [
        { level: 'user', subject: 'telegram:42', period: 'day', unit: 'usd', used: 0.5, limit: 2, left: 1.5, resetsAt: expect.stringMatching(/T00:00:00\.000Z$/), source: 'environment' },
        { level: 'deployment', subject: 'all', period: 'month', unit: 'tokens', used: 4000, limit: 1_000_000, left: 996_000, resetsAt: expect.stringMatching(/-01T00:00:00\.000Z$/), source: 'environment' },
      ],
      // No gateway or worker beats under this prefix: nothing to compare with.
      settings: { digest: expect.stringMatching(/^[0-9a-f]{12}$/), live: [] },
      warning: null,
    });
    expect(listed.stderr).not.toContain('warning');
    const table = (await runHere(['list'], limits)).stdout.split('\n');
    // `chatgate budgets` alone lists, as the README's first use of it does.
    expect((await runHere([], limits)).stdout.split('\n')).toEqual(table);
    expect(table[0]).toMatch(/^level\s+subject\s+period\s+used\s+limit\s+left\s+resets in\s+from\s+state$/);
    expect(table[1]).toMatch(/^user\s+telegram:42\s+day\s+\$0\.50\s+\$2\.00\s+\$1\.50\s+\d+ (h|min)/);

    const set = await run(['set', 'user', 'telegram:42', '--daily-usd', '5', '--monthly-tokens', '200000'], limits);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('user telegram:42: daily $5.00, monthly 200,000 tokens (stored in Redis; wins over the budgets file and the environment');
    expect(JSON.parse((await redis.hget(budgetKeys(keyPrefix).limits, 'user:telegram:42'))!)).toEqual({ v: 1, dailyUsd: 5, monthlyTokens: 200_000 });
    const after = (JSON.parse((await runHere(['list', '--json'], limits)).stdout) as { limits: Array<Record<string, unknown>> }).limits;
    expect(after.filter((r) => r.level === 'user')).toEqual([
      expect.objectContaining({ period: 'day', unit: 'usd', limit: 5, left: 4.5, source: 'override' }),
      expect.objectContaining({ period: 'month', unit: 'tokens', used: 4000, limit: 200_000, source: 'override' }),
    ]);
    expect(set.stderr).not.toContain('note:');
    const withoutLimits = await runHere(['set', 'user', 'telegram:42', '--monthly-tokens', 'none', '--json']);
    expect(withoutLimits.stdout).toContain('"dailyUsd": 5');
    expect(withoutLimits.stderr).toContain('this configuration sets no limit, and gateways and workers started with none do not check budgets');

    const reset = await run(['reset', 'user', 'telegram:42', '--usage', '--json'], limits);
    expect(JSON.parse(reset.stdout)).toEqual({ level: 'user', subject: 'telegram:42', removedOverride: true, usageReset: true, limits: { dailyUsd: 2 }, source: 'environment' });
    expect(await redis.hexists(budgetKeys(keyPrefix).limits, 'user:telegram:42')).toBe(0);
    const cleared = (JSON.parse((await runHere(['list', '--json'], limits)).stdout) as { limits: Array<Record<string, unknown>> }).limits;
    expect(cleared.find((r) => r.level === 'user')).toMatchObject({ used: 0, left: 2 });
  });

  it('lists unlimited subjects, and says which limit is blocked (its marker holds, even with some left)', async () => {
    const limits = { CHATGATE_BUDGET_USER_DAILY_TOKENS: '100' };
    const settings = { ...NO_BUDGETS, user: { day: { tokens: 100 } } };
    const ledger = createBudgetLedger(redis, { keyPrefix, settings });
    expect((await runHere(['set', 'user', 'web:vip', '--unlimited'], limits)).code).toBe(0);
    await spend({ user: 'web:vip' }, { tokens: 5000 });
    await spend({ user: 'web:max' }, { tokens: 60 });
    // 40 tokens left cannot hold a worst case of 50 even with nothing in flight: the marker holds.
    expect(await ledger.reserve({ user: 'web:max' }, { tokens: 50 })).toMatchObject({ breach: { unit: 'tokens', used: 60, limit: 100 } });
    const rows = (JSON.parse((await runHere(['list', '--json'], limits)).stdout) as { limits: Array<Record<string, unknown>> }).limits;
    expect(rows.filter((r) => r.subject === 'web:vip')).toEqual([
      expect.objectContaining({ period: 'day', unit: 'usd', used: 0, limit: null, left: null, source: 'override' }),
      expect.objectContaining({ period: 'day', unit: 'tokens', used: 5000, limit: null, left: null, source: 'override' }),
      expect.objectContaining({ period: 'month', unit: 'usd', limit: null }),
      expect.objectContaining({ period: 'month', unit: 'tokens', used: 5000, limit: null }),
    ]);
    expect(rows.filter((r) => r.subject === 'web:max')).toEqual([expect.objectContaining({ period: 'day', unit: 'tokens', used: 60, limit: 100, left: 40, blocked: true })]);
    const table = (await runHere(['list'], limits)).stdout;
    expect(table).toMatch(/^user\s+web:max\s+day\s+60 tokens\s+100 tokens\s+40 tokens\s+\S.*environment\s+blocked: answered at once until it resets$/m);
    expect(table).toMatch(/^user\s+web:vip\s+day\s+5,000 tokens\s+unlimited\s+-\s+\S.*override$/m);
    await runHere(['reset', 'user', 'web:vip', '--usage'], limits);
    await runHere(['reset', 'user', 'web:max', '--usage'], limits);
  });

  it('lists every limit beside a marker it cannot read, naming it and the reset that drops it', async () => {
    const limits = { CHATGATE_BUDGET_USER_DAILY_TOKENS: '100' };
    await spend({ user: 'web:ann' }, { tokens: 10 });
    await spend({ user: 'web:old' }, { tokens: 20 });
    const marker = budgetKeys(keyPrefix).exhausted('user', 'web:old');
    // Written by another chatgate version: it names no limit this one can read.
    await redis.set(marker, JSON.stringify({ v: 9, level: 'user' }), 'PX', 600_000);
    const fix = 'marker unreadable (format 9): it blocks nothing and goes when its period ends; `chatgate budgets reset user web:old` drops it now (and any limits stored for user web:old)';
    const listed = await runHere(['list', '--json'], limits);
    expect(listed.code, listed.stderr).toBe(0);
    const rows = (JSON.parse(listed.stdout) as { limits: Array<Record<string, unknown>> }).limits;
    expect(rows.filter((r) => r.subject === 'web:ann')).toEqual([expect.objectContaining({ period: 'day', unit: 'tokens', used: 10, left: 90 })]);
    expect(rows.find((r) => r.subject === 'web:ann')).not.toHaveProperty('markerUnreadable');
    expect(rows.filter((r) => r.subject === 'web:old')).toEqual([expect.objectContaining({ period: 'day', unit: 'tokens', used: 20, left: 80, markerUnreadable: fix })]);
    expect(rows.find((r) => r.subject === 'web:old')).not.toHaveProperty('blocked');
    const table = (await runHere(['list'], limits)).stdout;
    expect(table).toMatch(/^user\s+web:ann\s+day\s+10 tokens\s+100 tokens\s+90 tokens\s+\S.*environment$/m);
    expect(table.split('\n').find((line) => line.includes('web:old'))).toMatch(/environment {2}marker unreadable \(format 9\): it blocks nothing .*`chatgate budgets reset user web:old` drops it now/);
    // What the line says is what the reset does.
    expect((await runHere(['reset', 'user', 'web:old'], limits)).code).toBe(0);
    expect(await redis.exists(marker)).toBe(0);
    expect((JSON.parse((await runHere(['list', '--json'], limits)).stdout) as { limits: Array<Record<string, unknown>> }).limits.find((r) => r.subject === 'web:old')).not.toHaveProperty('markerUnreadable');
    await runHere(['reset', 'user', 'web:ann', '--usage'], limits);
    await runHere(['reset', 'user', 'web:old', '--usage'], limits);
  });

  it('refuses bad input with exit 2 and a line that says what is wrong', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['set', 'admin', 'x', '--daily-usd', '1'], /the level must be user, chat or deployment \(got "admin"\)/],
      [['set', 'user', '42', '--daily-usd', '1'], /a user is <channel>:<userId> with a channel of telegram, discord, web, api \(e\.g\. telegram:42.*\(got "42"\)/],
      [['set', 'user', 'slack:42', '--daily-usd', '1'], /a user is <channel>:<userId> .*\(got "slack:42"\)/],
      [['set', 'chat', 'c1', '--daily-usd', '1'], /a chat is a session id, <channel>:<chatId>… .*\(e\.g\. web:c1, telegram:-1001234.*\(got "c1"\)/],
      [['reset', 'chat', 'web:'], /a chat is a session id.*\(got "web:"\)/],
      [['set', 'user', 'telegram:42', '--daily-usd', 'lots'], /--daily-usd.*must be a number in \[0, 1000000000\] with at most 6 decimals \(e\.g\. 2\.50\) or `none`\n\(run `chatgate budgets set --help` for its options\)/],
      [['set', 'user', 'telegram:42', '--daily-tokens', '1.5'], /--daily-tokens.*must be an integer in \[0, 9007199254740991\] or `none`/],
      [['set', 'user', 'telegram:42', '--daily-tokens', '9007199254740992'], /--daily-tokens.*must be an integer in \[0, 9007199254740991\]/],
      [['set', 'user', 'telegram:42', '--daily-usd', '-1'], /--daily-usd.*must be a number in \[0, 1000000000\]/],
      [['show'], /unknown command 'show'\n\(run `chatgate budgets --help` for its commands\)/],
      [['set', 'user', 'telegram:42'], /say what to set: --daily-usd/],
      [['set', 'user', 'telegram:42', '--unlimited', '--daily-usd', '1'], /--unlimited cannot be combined with a limit/],
      [['set', 'deployment', 'everyone', '--daily-usd', '1'], /the deployment takes no id \(got "everyone"\)/],
      [['reset', 'chat'], /say which chat: chatgate budgets … chat <session id>/],
    ];
    const results = [];
    for (const [args] of cases) results.push(await runHere(args));
    results.forEach((result, k) => {
      expect(result.code, cases[k]![0].join(' ')).toBe(2);
      expect(result.stderr).toMatch(cases[k]![1]);
    });
    expect(await redis.exists(budgetKeys(keyPrefix).limits)).toBe(0);
  });

  it('takes a limit off with `none` (list then shows none for it) and refuses to read a malformed stored limit', async () => {
    const limits = { CHATGATE_BUDGET_USER_DAILY_USD: '0.5' };
    await spend({ user: 'web:bob', chat: 'web:c1' }, { micro: 100_000, tokens: 10 });
    const set = await runHere(['set', 'user', 'web:bob', '--daily-usd', 'none', '--daily-tokens', '1'], limits);
    expect(set).toMatchObject({ code: 0, stdout: expect.stringContaining('user web:bob: daily 1 token, monthly none (stored in Redis') });
    expect(JSON.parse((await redis.hget(budgetKeys(keyPrefix).limits, 'user:web:bob'))!)).toEqual({ v: 1, dailyTokens: 1 });
    const removed = await runHere(['set', 'user', 'web:bob', '--daily-tokens', 'none'], limits);
    expect(removed).toMatchObject({ code: 0, stdout: expect.stringContaining('user web:bob: no limit (stored') });
    expect(JSON.parse((await redis.hget(budgetKeys(keyPrefix).limits, 'user:web:bob'))!)).toEqual({ v: 1 });
    const listed = await runHere(['list', '--json'], limits);
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { limits: Array<{ subject: string }> }).limits.filter((r) => r.subject === 'web:bob')).toEqual([]);

    await redis.hset(budgetKeys(keyPrefix).limits, 'user:web:bob', JSON.stringify({ v: 1, dailyUsd: '' }));
    for (const args of [['list'], ['set', 'user', 'web:bob', '--daily-usd', '1']]) {
      const refused = await runHere(args, limits);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe('chatgate: the stored budget limits of user web:bob are unreadable (`dailyUsd` must be a number in [0, 1000000000] with at most 6 decimals (got "")): remove them with `chatgate budgets reset user web:bob`, then set them again with `chatgate budgets set`');
    }
    expect((await runHere(['reset', 'user', 'web:bob', '--usage'], limits)).code).toBe(0);
    expect((await runHere(['list'], limits)).stdout).toMatch(/^user\s+web:bob\s+day\s+\$0\.00\s+\$0\.50/m);
    await runHere(['reset', 'user', 'web:bob'], limits);
  });

  it('takes the chat subjects every channel names its sessions by, and says "the deployment" and "1 token"', async () => {
    for (const chat of ['web:c1', 'telegram:-1001234', 'telegram:-1001234:7', 'telegram:-1001234:u42', 'discord:1234567890:987', 'api:alice:default']) {
      const set = await runHere(['set', 'chat', chat, '--monthly-usd', '3']);
      expect(set.code, `${chat}: ${set.stderr}`).toBe(0);
      expect((await runHere(['reset', 'chat', chat])).stdout).toContain(`chat ${chat}: stored limits removed`);
    }
    const deployment = await runHere(['set', 'deployment', '--daily-tokens', '1', '--daily-usd', '0.01'], { CHATGATE_BUDGET_USER_DAILY_USD: '1' });
    expect(deployment.stdout).toContain('the deployment: daily $0.01 and 1 token, monthly none');
    const table = (await runHere(['list'], { CHATGATE_BUDGET_USER_DAILY_USD: '1' })).stdout;
    expect(table).toMatch(/^deployment\s+\(whole\)\s+day\s+\d[\d,]* tokens?\s+1 token\s+0 tokens/m);
    expect((await runHere(['reset', 'deployment'])).stdout).toMatch(/^the deployment: stored limits removed/);
    expect(await redis.exists(budgetKeys(keyPrefix).limits)).toBe(0);
  });

  it('`chatgate compact` with the deployment\'s budget used up compacts with the fallback: no model call', { timeout: 120_000 }, async () => {
    await spend({}, { tokens: 100 });
    const store = createSessionStore({ redis }, { keyPrefix });
    const fence = (await acquireLease(redis, store.keys('web:abc')))!;
    const counter = new TokenCounter();
    const entries = Array.from({ length: 10 }, (_, k) => [
      toEntry({ role: 'user', content: `Question ${k}: where is order ORD-${1000 + k}? ${'It was due last week and nothing has arrived. '.repeat(4)}` }, counter),
      toEntry({ role: 'assistant', content: `Answer ${k}: order ORD-${1000 + k} is with the carrier. ${'I will keep checking and tell you. '.repeat(4)}` }, counter),
    ]).flat();
    await store.commit('web:abc', { expectedVersion: 0, fence, projection: { append: entries }, transcript: [], meta: { lastPromptTokens: 3000, appendedTokensSince: 0, overheadTokens: 100 }, finishTurn: true });
    await releaseLease(redis, store.keys('web:abc'), fence);
    const result = await runChatgate(['compact', 'web:abc'], { ...env, CHATGATE_BUDGET_DEPLOYMENT_DAILY_TOKENS: '100' });
    expect(result.stdout).toMatch(/^web:abc: fallback, [\d,]+ → [\d,]+ tokens \(summariser failed: model call with test-model not made: This bot has used today's budget of 100 tokens/m);
    expect(result.code).toBe(0);
    expect(completions).toBe(0);
    expect((await store.load('web:abc')).meta.compaction).toMatchObject({ lastOutcome: 'fallback' });
  });
});
