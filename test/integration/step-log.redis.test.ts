import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { StaleCommitError, StoredFormatError } from '../../src/errors.js';
import { claimInbox } from '../../src/redis/inbox.js';
import { sessionKeys, type SessionKeys } from '../../src/redis/keys.js';
import { acquireLease, releaseLease } from '../../src/redis/lease.js';
import { createSessionStore, toEntry } from '../../src/redis/session-store.js';
import { askedApprovalIds, createStepLog, STEP_LOG_FORMAT, type RecordedAnswer } from '../../src/redis/step-log.js';
import { toUserMessage } from '../../workers/model-request.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';
import { TokenCounter } from '../../src/core/tokens.js';

const TOKENS = new TokenCounter();

const SESSION = 'web:s1';
const answer = (content: string): RecordedAnswer => ({
  message: { role: 'assistant', content }, usage: { promptTokens: 10, completionTokens: 3, cachedTokens: 0 }, finishReason: 'stop', model: 'gpt-4o-mini',
});

describe('step log', () => {
  let t: TestRedis;
  let keys: SessionKeys;

  beforeEach(() => {
    t = createTestRedis();
    keys = sessionKeys(SESSION, t.keyPrefix);
  });
  afterEach(async () => { await t.cleanup(); });

  it('records a round under the lease and refuses writes without it or for another turn', async () => {
    const fence = (await acquireLease(t.redis, keys, 5_000))!;
    const log = createStepLog(t.redis, { keys, turnId: 'm1', fence });
    await log.recordAnswer(answer('first'));
    await log.recordStarted('call_1');
    await log.recordResult('call_1', 'done');
    expect(await log.read()).toEqual({ answer: answer('first'), results: new Map([['call_1', 'done']]), images: new Map(), started: new Set(['call_1']), committed: false, approvals: new Map() });
    await log.recordAnswer(answer('second'));
    expect(await log.read()).toMatchObject({ answer: answer('second'), results: new Map(), started: new Set() });
    expect(await createStepLog(t.redis, { keys, turnId: 'other', fence }).read()).toBeNull();
    await expect(createStepLog(t.redis, { keys, turnId: 'other', fence }).recordResult('call_2', 'x')).rejects.toBeInstanceOf(StaleCommitError);
    await expect(createStepLog(t.redis, { keys, turnId: 'm1', fence: fence + 1 }).recordResult('call_2', 'x')).rejects.toBeInstanceOf(StaleCommitError);
    expect((await log.read())?.results.has('call_2')).toBe(false);
    expect(await t.redis.pttl(keys.steps)).toBeGreaterThan(0);
  });

  it('keeps the references of the images a call returned with its result', async () => {
    const log = createStepLog(t.redis, { keys, turnId: 'm1', fence: (await acquireLease(t.redis, keys, 5_000))! });
    await log.recordAnswer(answer('round'));
    const refs = [{ id: 'abc-0', mimeType: 'image/png', fileName: 'call_1-1' }, { id: 'abc-1', mimeType: 'image/jpeg', fileName: 'call_1-2' }];
    await log.recordResult('call_1', 'two images', refs);
    await log.recordResult('call_2', 'no image');
    const round = await log.read();
    expect(round?.results).toEqual(new Map([['call_1', 'two images'], ['call_2', 'no image']]));
    expect(round?.images).toEqual(new Map([['call_1', refs]]));
  });

  it('refuses a log of another format version, naming it and the version it reads', async () => {
    const log = createStepLog(t.redis, { keys, turnId: 'm1', fence: (await acquireLease(t.redis, keys, 5_000))! });
    await log.recordAnswer(answer('round'));
    await log.recordApproval('call_1', 'ap1');
    expect(await t.redis.hget(keys.steps, 'format')).toBe(String(STEP_LOG_FORMAT));
    // What an older chatgate left: no format field, results as bare text.
    await t.redis.hdel(keys.steps, 'format');
    const refused = new RegExp(`^the step log ${keys.steps.replace(/[{}]/g, '\\$&')} has format version none; this chatgate reads version ${STEP_LOG_FORMAT}: `);
    await expect(log.read()).rejects.toThrow(refused);
    await expect(log.read()).rejects.toBeInstanceOf(StoredFormatError);
    await expect(askedApprovalIds(t.redis, keys)).rejects.toThrow(refused);
    await t.redis.hset(keys.steps, 'format', '3');
    await expect(log.read()).rejects.toThrow(/has format version "3"; this chatgate reads version 2/);
  });
});

describe('a turn retried after a crash', () => {
  let rig: WorkerRig;
  beforeEach(async () => { rig = await openWorkerRig(() => ({ content: 'asked again' })); });
  afterEach(() => rig.close());

  it('replies with the final answer its step log recorded, without asking the model again', async () => {
    const { t, fake, producer, out } = rig;
    const keys = sessionKeys(SESSION, t.keyPrefix);
    const message: InboundMessage = { id: 'web:s1:1', channel: 'web', chatId: 's1', userId: 'u', userName: 'U', text: 'hi', attachments: [], receivedAt: Date.now() };
    await producer.submitInbound(message);
    // What a worker killed between the model's answer and the turn's final commit leaves behind.
    const fence = (await acquireLease(t.redis, keys, 5_000))!;
    await claimInbox(t.redis, keys);
    const store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix });
    await store.commit(SESSION, { expectedVersion: 0, fence, projection: { append: [toEntry(toUserMessage(message), TOKENS)] }, meta: { turnInboundIds: [message.id] } });
    await createStepLog(t.redis, { keys, turnId: message.id, fence }).recordAnswer(answer('recorded answer'));
    await releaseLease(t.redis, keys, fence);

    await rig.start({ llm: { baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o-mini' } });
    await out.waitFor((replies) => replies.length === 1);
    expect(out.replies[0]).toMatchObject({ kind: 'reply', text: 'recorded answer' });
    expect(fake.requests).toHaveLength(0);
    expect(await t.redis.exists(keys.steps, keys.processing)).toBe(0);
  });
});
