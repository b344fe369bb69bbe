import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText } from '../../src/core/messages.js';
import type { TurnProducer } from '../../src/queue/producer.js';
import { readDeadLetters, requeueDeadLetters } from '../../src/redis/dead-letters.js';
import { sessionKeys, type SessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import type { RunWorkerOptions } from '../../workers/main.js';
import { TURN_NOTICES } from '../../workers/notices.js';
import type { FakeOpenAI, FakeReply } from '../fakes/openai-server.js';
import { createLogSink, type LogSink } from '../helpers/log-sink.js';
import type { OutboundCollector, TestRedis } from '../helpers/redis.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const SESSION = 'web:chat1';
const API_KEY = 'sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4';
let seq = 0;

function inbound(text: string): InboundMessage {
  seq++;
  return { id: `web:chat1:${seq}`, channel: 'web', chatId: 'chat1', userId: 'u1', userName: 'Ann', text, attachments: [], receivedAt: Date.now() };
}

describe('model failures', () => {
  let rig: WorkerRig;
  let t: TestRedis;
  let fake: FakeOpenAI;
  let producer: TurnProducer;
  let out: OutboundCollector;
  let sink: LogSink;
  let keys: SessionKeys;

  const start = (llm: Partial<RunWorkerOptions['llm']> = {}) => rig.start({
    logger: sink.logger, concurrency: 2,
    llm: { baseURL: fake.baseURL, apiKey: API_KEY, model: 'gpt-4o-mini', retry: { baseDelayMs: 5, maxRetries: 2 }, ...llm },
  });

  beforeEach(async () => {
    rig = await openWorkerRig();
    ({ t, fake, producer, out } = rig);
    sink = createLogSink('debug');
    keys = sessionKeys(SESSION, t.keyPrefix);
  });
  afterEach(async () => { await rig.close(); });

  it.each<[string, FakeReply]>([
    ['malformed JSON', { raw: '{"id": "chatcmpl-1", "choices": [{"index": 0, "mess' }],
    ['an answer without choices', { noChoices: true }],
  ])('retries %s as a transient failure and answers', async (_name, broken) => {
    await start();
    fake.setHandler((r) => (r.index === 0 ? broken : { content: 'fine now' }));
    await producer.submitInbound(inbound('hello'));
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]).toMatchObject({ kind: 'reply', text: 'fine now' });
    expect(sink.lines.find((line) => line.msg === 'llm call failed, retrying')).toMatchObject({ kind: 'transient' });
  });

  it('gives a hung model up after the configured timeout, tells the user, and keeps the message for `chatgate retry`', async () => {
    await start({ timeoutMs: 200, retry: { baseDelayMs: 5, maxRetries: 1 } });
    let hung = true;
    fake.setHandler(() => (hung ? { hold: new Promise<FakeReply>(() => undefined) } : { content: 'answered after the outage' }));
    const lost = inbound('are you there?');
    await producer.submitInbound(lost);
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]).toMatchObject({ kind: 'notice' });
    expect(out.replies[0]?.text).toBe(TURN_NOTICES.unavailable('it did not answer within 0.2 s'));
    expect(fake.requests).toHaveLength(2);
    expect((await readDeadLetters(t.redis, keys)).map((letter) => letter.message?.id)).toEqual([lost.id]);

    hung = false;
    expect(await requeueDeadLetters(t.redis, keys)).toBe(1);
    await producer.enqueueTurn(SESSION);
    await out.waitFor((r) => r.length === 2);
    expect(out.replies[1]).toMatchObject({ kind: 'reply', text: 'answered after the outage' });
    const replayed = fake.requests[fake.requests.length - 1]!.messages.filter((m) => m.role === 'user').map(messageText);
    expect(replayed).toEqual(['are you there?']);
    const users = (await readTranscript(t.redis, keys)).filter((e) => e.type === 'message' && e.message.role === 'user');
    expect(users).toHaveLength(1);
  });

  it('dead-letters a turn the endpoint refuses, and never logs the API key its error body echoes', async () => {
    await start();
    fake.setHandler(() => ({ status: 401, message: `Incorrect API key provided: ${API_KEY}. Header was Authorization: Bearer ${API_KEY}`, code: 'invalid_api_key' }));
    const refused = inbound('hi');
    await producer.submitInbound(refused);
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]?.text).toBe(TURN_NOTICES.refused('HTTP 401'));
    expect((await readDeadLetters(t.redis, keys)).map((letter) => letter.message?.id)).toEqual([refused.id]);
    const logged = sink.lines.filter((line) => line.level >= 40);
    expect(logged.length).toBeGreaterThan(0);
    const text = JSON.stringify(sink.lines);
    expect(text).toContain('Incorrect API key provided');
    expect(text).not.toContain(API_KEY);
    expect(text).not.toMatch(/sk-[A-Za-z0-9_-]{8,}/);
    expect(text).not.toMatch(/Bearer [A-Za-z0-9]/);
  });
});
