/**
 * Every model call goes through the budget wrapper: the gateway's compactions (hygiene, /compact),
 * the CLI's (no user), /btw side questions, transcriptions; a used-up budget gives compaction's deterministic fallback.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBudgetGuard } from '../../src/budget/guard.js';
import { createBudgetLedger, type BudgetScope } from '../../src/budget/ledger.js';
import { createBudgetAdmin } from '../../src/budget/overrides.js';
import { NO_BUDGETS, type BudgetSettings } from '../../src/core/budget.js';
import type { SessionLimits } from '../../src/core/session-figures.js';
import { TokenCounter } from '../../src/core/tokens.js';
import { BudgetError, StoredFormatError } from '../../src/errors.js';
import { createTranscriber } from '../../src/llm/transcribe.js';
import { createSilentLogger } from '../../src/log.js';
import { attachmentIdOf, storeAttachment } from '../../src/redis/attachments.js';
import { budgetKeys } from '../../src/redis/keys.js';
import { acquireLease, releaseLease } from '../../src/redis/lease.js';
import { createSessionStore, toEntry } from '../../src/redis/session-store.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { createLlmSessionOps } from '../../src/session/session-ops.js';
import { createLlmSideQuestion } from '../../src/session/side-question.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { oggBytes } from '../helpers/files.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { createAttachmentReader } from '../../workers/attachments.js';

const MODEL = 'fake-model';
const PRICES = { [MODEL]: { input: 10, output: 10 } };
const LIMITS: SessionLimits = { model: MODEL, summaryModel: MODEL, contextWindow: 4096, reservedOutputTokens: 0 };
const TOKENS = new TokenCounter();
const settings = (patch: Partial<BudgetSettings>): BudgetSettings => ({ ...NO_BUDGETS, ...patch });

describe('every model call is budgeted', () => {
  let t: TestRedis;
  let fake: FakeOpenAI;
  beforeEach(async () => {
    t = createTestRedis();
    fake = await startFakeOpenAI(() => ({ content: '## Goal\nTrack order ORD-48213-XK.', usage: { prompt_tokens: 900, completion_tokens: 100 } }));
  });
  afterEach(async () => {
    await fake.close();
    await t.cleanup();
  });

  /** A session of 12 exchanges, idle, ready to compact (`lastPromptTokens` 3,000: under the hygiene line of 0.85 × 4,096). */
  async function seed(sessionId: string, lastPromptTokens = 3000): Promise<void> {
    const store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix });
    const fence = (await acquireLease(t.redis, store.keys(sessionId)))!;
    const entries = Array.from({ length: 12 }, (_, k) => [
      toEntry({ role: 'user', content: `Question ${k + 1}: where is order ORD-48213-XK? The tracking page at https://example.com/track/48213 shows nothing new since 2026-01-1${k % 9}.` }, TOKENS),
      toEntry({ role: 'assistant', content: `Answer ${k + 1}: the order ORD-48213-XK left the warehouse; I will keep checking the carrier. Reference #4471 is on your ticket.` }, TOKENS),
    ]).flat();
    await store.commit(sessionId, {
      expectedVersion: 0, fence, projection: { append: entries },
      transcript: entries.map((e) => ({ type: 'message' as const, message: e.message, tokens: e.tokens, atMs: 1 })),
      meta: { limits: LIMITS, lastPromptTokens, appendedTokensSince: 0, overheadTokens: 200 }, finishTurn: true,
    });
    await releaseLease(t.redis, store.keys(sessionId), fence);
  }

  const opsWith = (s: BudgetSettings) => {
    const guard = createBudgetGuard({ redis: t.redis, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, settings: s, prices: PRICES, defaultMaxTokens: 100 });
    return createLlmSessionOps({ redis: t.redis, logger: createSilentLogger(), guardLlm: guard!.llm }, {
      baseURL: fake.baseURL, apiKey: 'k', threshold: 0.5, hygieneThreshold: 0.85, limits: LIMITS, keyPrefix: t.keyPrefix, leaseTtlMs: 10_000, llmMaxRetries: 0, llmStream: false, prices: PRICES,
    });
  };

  it('a gateway summary (/compact, hygiene) is priced with the configured prices, as the workers price theirs', async () => {
    await seed('telegram:42');
    expect(await opsWith(settings({ deployment: { day: { tokens: 1_000_000 } } })).compact('telegram:42')).toMatchObject({ busy: false, value: { outcome: 'compacted' } });
    const usage = await t.redis.hgetall(createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix }).keys('telegram:42').usage);
    // 900 prompt and 100 completion tokens at $10 a million each: $0.01.
    expect(usage).toMatchObject({ summaryCalls: '1', costMicroUsd: '10000' });
    expect(usage.unpricedCalls).toBeUndefined();
  });
  const usedTokens = async (s: BudgetSettings, scope: BudgetScope) =>
    Object.fromEntries((await createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: s }).state(scope)).filter((c) => c.period === 'day').map((c) => [c.level, c.usedTokens]));

  it('/compact counts its summary for the sender and the chat; `chatgate compact` (no user) for the chat and the deployment', async () => {
    const s = settings({ user: { day: { tokens: 1_000_000 } }, chat: { day: { tokens: 1_000_000 } }, deployment: { day: { tokens: 1_000_000 } } });
    const ops = opsWith(s);
    await seed('telegram:42');
    await seed('telegram:7');
    const asked = await ops.compact('telegram:42', { user: 'telegram:42' });
    expect(asked).toMatchObject({ busy: false, value: { outcome: 'compacted' } });
    expect(await usedTokens(s, { user: 'telegram:42', chat: 'telegram:42' })).toEqual({ user: 1000, chat: 1000, deployment: 1000 });
    const cli = await ops.compact('telegram:7');
    expect(cli).toMatchObject({ busy: false, value: { outcome: 'compacted' } });
    expect(await usedTokens(s, { user: 'telegram:7', chat: 'telegram:7' })).toEqual({ user: 0, chat: 1000, deployment: 2000 });
    expect(fake.requests).toHaveLength(2);
  });

  it('/btw reserves and settles its call for the sender and the chat, and is refused once its worst case no longer fits', async () => {
    // Each answer reports 1,000 tokens; a call's worst case (the session as counted + 100) is about 1,200.
    const s = settings({ user: { day: { tokens: 2400 } } });
    const guard = createBudgetGuard({ redis: t.redis, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, settings: s, prices: PRICES, defaultMaxTokens: 100 })!;
    const store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix });
    const btw = createLlmSideQuestion({ redis: t.redis, store, logger: createSilentLogger(), guardLlm: guard.llm }, {
      baseURL: fake.baseURL, apiKey: 'k', model: MODEL, timeoutMs: 10_000, systemPrompt: 'Be brief.', contextWindow: 4096, reservedOutputTokens: 0, prices: PRICES,
    });
    await seed('telegram:42');
    const scope = { user: 'telegram:42', chat: 'telegram:42' };
    expect(await btw('telegram:42', 'Which order was it?', 'telegram:42')).toContain('ORD-48213-XK');
    expect(await usedTokens(s, scope)).toEqual({ user: 1000, chat: 1000, deployment: 1000 });
    // The second brings the limit past the notice share: the answer says so below it.
    expect(await btw('telegram:42', 'And the ticket?', 'telegram:42')).toMatch(/\n\nYou have used 83% of today's budget of 2,400 tokens: 400 tokens are left\./);
    await expect(btw('telegram:42', 'Anything else?', 'telegram:42')).rejects.toThrow(/You have nearly used today's budget of 2,400 tokens: 400 tokens are left, not enough for another answer\. An answer may use up to 1,\d{3} tokens\./);
    expect(fake.requests).toHaveLength(2);
  });

  it('hygiene counts its summary for the sender the gateway names, and the chat', async () => {
    const s = settings({ user: { day: { tokens: 1_000_000 } }, chat: { day: { tokens: 1_000_000 } } });
    await seed('telegram:42', 3800);
    const result = await opsWith(s).hygiene('telegram:42', undefined, 'telegram:42');
    expect(result).toMatchObject({ outcome: 'compacted' });
    expect(await usedTokens(s, { user: 'telegram:42', chat: 'telegram:42' })).toEqual({ user: 1000, chat: 1000, deployment: 1000 });
  });

  it('a used-up budget gives the deterministic fallback: no model call, every message kept in the transcript', async () => {
    const s = settings({ deployment: { day: { tokens: 500 } } });
    const ledger = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: s });
    const spent = await ledger.reserve({}, { tokens: 1 });
    if (!('id' in spent)) throw new Error('refused');
    await ledger.settle({}, spent.id, { tokens: 500 });
    await seed('telegram:42');
    const result = await opsWith(s).compact('telegram:42', { user: 'telegram:42' });
    expect(result).toMatchObject({ busy: false, value: { outcome: 'fallback', reason: expect.stringContaining("today's budget") } });
    expect(fake.requests).toHaveLength(0);
    const transcript = await readTranscript(t.redis, createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix }).keys('telegram:42'));
    expect(transcript.filter((e) => e.type === 'message')).toHaveLength(24);
    expect(transcript.at(-1)).toMatchObject({ type: 'compaction', outcome: 'fallback' });
  });

  it('reserves a transcription by the audio size, settles the reported duration, and refuses it once the budget is used', async () => {
    fake.setTranscriber(() => ({ text: 'hello', seconds: 6 }));
    const s = settings({ user: { day: { usd: 0.001 } } });
    const guard = createBudgetGuard({ redis: t.redis, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, settings: s, defaultMaxTokens: 100 })!;
    const transcriber = guard.transcriber(createTranscriber({ baseURL: fake.baseURL, apiKey: 'k', model: 'whisper-1', maxRetries: 0 }));
    const scope = { user: 'telegram:42', chat: 'telegram:42' };
    const voice = { bytes: Buffer.alloc(4000, 1), fileName: 'voice.ogg', mimeType: 'audio/ogg' };
    expect(await transcriber.transcribe(voice, { scope })).toEqual({ text: 'hello', usage: { seconds: 6 } });
    const [day] = await createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: s }).state(scope);
    expect(day).toMatchObject({ level: 'user', period: 'day', usedUsd: 0.0006 }); // 6 s of whisper-1 at $0.006 a minute
    await transcriber.transcribe(voice, { scope });
    await expect(transcriber.transcribe(voice, { scope })).rejects.toBeInstanceOf(BudgetError);
    expect(fake.transcriptions).toHaveLength(2);
  });

  it('a voice message over the budget is not transcribed: the user reads which limit holds, the model a note', async () => {
    const s = settings({ user: { day: { usd: 0.001 } } });
    const spent = await createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: s }).reserve({ user: 'web:u' }, { micro: 0, tokens: 0 });
    if (!('id' in spent)) throw new Error('refused');
    await createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: s }).settle({ user: 'web:u' }, spent.id, { micro: 1000, tokens: 0 });
    const guard = createBudgetGuard({ redis: t.redis, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, settings: s, defaultMaxTokens: 100 })!;
    const transcriber = guard.transcriber(createTranscriber({ baseURL: fake.baseURL, apiKey: 'k', model: 'whisper-1', maxRetries: 0 }));
    const reader = createAttachmentReader({ redis: t.redis, keyPrefix: t.keyPrefix, log: createSilentLogger(), transcriber }, { vision: false });
    const stored = await storeAttachment(t.redis, 'web:u', attachmentIdOf('m1', 0), oggBytes(), { keyPrefix: t.keyPrefix, ttlSeconds: 60 });
    const message = { id: 'm1', channel: 'web' as const, chatId: 'u', userId: 'u', userName: 'U', text: '', receivedAt: 0, attachments: [{ kind: 'voice' as const, ref: 'r', fileName: 'voice.ogg', mimeType: 'audio/ogg', stored }] };
    const files = await reader.read('web:u', message, { user: 'web:u', chat: 'web:u' });
    expect(files.texts).toEqual(['[voice message: not transcribed, the budget is used up]']);
    expect(files.notices).toEqual([expect.stringMatching(/^I did not transcribe your voice message: You have used today's budget of \$0\.001\. It resets at 00:00 UTC, in /)]);
    expect(fake.transcriptions).toHaveLength(0);
  });

  it('refuses a stored override of another format version instead of reading it as "no limit"', async () => {
    const s = settings({ user: { day: { tokens: 10 } } });
    await t.redis.hset(budgetKeys(t.keyPrefix).limits, 'user:telegram:42', JSON.stringify({ v: 2, dailyTokens: 1e9 }));
    const ledger = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: s });
    await expect(ledger.reserve({ user: 'telegram:42' }, { tokens: 1 })).rejects.toThrow(/user:telegram:42 are not in format version 1/);
    await expect(createBudgetAdmin(t.redis, { keyPrefix: t.keyPrefix, settings: s }).limitsOf('user', 'telegram:42')).rejects.toBeInstanceOf(StoredFormatError);
    expect(await t.redis.exists(budgetKeys(t.keyPrefix).counters(new Date().toISOString().slice(0, 7)))).toBe(0);
  });

  it.each([[''], ['5'], [-1], [true]])('refuses a stored limit of %j instead of reading it as "no limit"', async (value) => {
    const s = settings({ user: { day: { tokens: 10 } } });
    await t.redis.hset(budgetKeys(t.keyPrefix).limits, 'user:telegram:42', JSON.stringify({ v: 1, dailyUsd: value }));
    const ledger = createBudgetLedger(t.redis, { keyPrefix: t.keyPrefix, settings: s });
    await expect(ledger.reserve({ user: 'telegram:42' }, { tokens: 1 })).rejects.toThrow(/budget limits of user:telegram:42 are unreadable: remove them with chatgate budgets reset/);
  });
});
