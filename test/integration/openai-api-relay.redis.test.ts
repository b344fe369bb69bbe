/**
 * The API channel across gateways, on real Redis: an answer delivered by another gateway's channel
 * reaches the request waiting here (pub/sub, with the request's mark in Redis); an answer nobody
 * waits for is dropped with a log line; the mark goes when the request ends.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOpenAiApiChannel, type OpenAiApiChannel } from '../../channels/openai-api/index.js';
import { apiWaitingKey } from '../../src/redis/keys.js';
import { createLogSink } from '../helpers/log-sink.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const KEY = 'sk-relay-0123456789abcdef';

let t: TestRedis;
const channels: OpenAiApiChannel[] = [];

beforeEach(() => {
  t = createTestRedis();
});

afterEach(async () => {
  for (const channel of channels.splice(0)) await channel.stop();
  await t.cleanup();
});

async function gateway(logger = createLogSink().logger): Promise<OpenAiApiChannel> {
  const channel = createOpenAiApiChannel({ redis: t.redis, log: logger }, { keys: [{ key: KEY, user: 'alice' }], keyPrefix: t.keyPrefix });
  await channel.start(async () => ({ outcome: 'accepted' }));
  channels.push(channel);
  return channel;
}

const ask = (channel: OpenAiApiChannel, session: string) => channel.app.request('/v1/chat/completions', {
  method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'x-chatgate-session': session },
  body: JSON.stringify({ model: 'chatgate', messages: [{ role: 'user', content: 'hi' }] }),
});

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('the API answer relay', () => {
  it('hands an answer another gateway delivers to the request waiting here, then clears the mark', async () => {
    const here = await gateway();
    const sink = createLogSink();
    const there = await gateway(sink.logger);
    const response = ask(here, 's1');
    await until(async () => here.waiting() === 1 && (await t.redis.exists(apiWaitingKey('alice:s1', t.keyPrefix))) === 1);
    await there.send({ chatId: 'alice:s1' }, { text: 'compaction notice', mode: 'formatted' });
    await there.send({ chatId: 'alice:s1' }, { text: 'from the other gateway', mode: 'formatted', answersTurn: true });
    const body = await (await response).json() as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toBe('from the other gateway');
    await until(async () => (await t.redis.exists(apiWaitingKey('alice:s1', t.keyPrefix))) === 0);
    expect(here.waiting()).toBe(0);
    expect(sink.lines.filter((line) => line.msg.includes('dropped'))).toEqual([]);
  });

  it('drops an answer no request waits for, with a log line', async () => {
    const sink = createLogSink();
    const there = await gateway(sink.logger);
    await there.send({ chatId: 'alice:gone' }, { text: 'nobody reads this', mode: 'formatted', answersTurn: true });
    const line = await sink.waitFor((l) => l.msg.startsWith('api answer dropped'));
    expect(line).toMatchObject({ chatId: 'alice:gone', channel: 'api' });
    expect(JSON.stringify(sink.lines)).not.toContain(KEY);
  });
});
