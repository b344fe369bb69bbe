/**
 * The API channel across gateways, on real Redis: an answer delivered by another gateway's channel
 * reaches the request waiting here (pub/sub, with the request's claim on its session in Redis); an
 * answer nobody waits for is dropped with a log line; the claim goes when the request ends.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApiAnswerRelay, createOpenAiApiChannel, type OpenAiApiChannel, type OpenAiApiChannelDeps } from '../../channels/openai-api/index.js';
import { createRedisReplyRelay } from '../../channels/openai-api/relay.js';
import { apiAskingKey } from '../../src/redis/keys.js';
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

async function gateway(logger = createLogSink().logger, answeredBy?: OpenAiApiChannelDeps['answeredBy']): Promise<OpenAiApiChannel> {
  const channel = createOpenAiApiChannel({ redis: t.redis, log: logger, answeredBy }, { keys: [{ key: KEY, user: 'alice' }], keyPrefix: t.keyPrefix });
  await channel.start(async (message) => ({ outcome: message.text.startsWith('/') ? 'command' : 'accepted' }));
  channels.push(channel);
  return channel;
}

const askInit = (session: string, text = 'hi', idempotencyKey?: string): RequestInit => ({
  method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'x-chatgate-session': session, ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
  body: JSON.stringify({ model: 'chatgate', messages: [{ role: 'user', content: text }] }),
});
const ask = (channel: OpenAiApiChannel, session: string, text?: string) => channel.app.request('/v1/chat/completions', askInit(session, text));
const contentOf = async (response: Response | Promise<Response>) => ((await (await response).json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content;

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('the API answer relay', () => {
  it('hands an answer another gateway delivers to the request waiting here, then clears the claim', async () => {
    const here = await gateway();
    const sink = createLogSink();
    const there = await gateway(sink.logger);
    const response = ask(here, 's1');
    await until(async () => here.waiting() === 1 && (await t.redis.exists(apiAskingKey('alice:s1', t.keyPrefix))) === 1);
    await there.send({ chatId: 'alice:s1' }, { text: 'compaction notice', mode: 'formatted' });
    await there.send({ chatId: 'alice:s1' }, { text: 'from the other gateway', mode: 'formatted', answersTurn: true });
    const body = await (await response).json() as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toBe('from the other gateway');
    await until(async () => (await t.redis.exists(apiAskingKey('alice:s1', t.keyPrefix))) === 0);
    expect(here.waiting()).toBe(0);
    expect(sink.lines.filter((line) => line.msg.includes('dropped'))).toEqual([]);
  });

  it('keeps one request at a time per session across gateways: another gateway answers 409 at once, until the answer came or the client went away', async () => {
    const here = await gateway();
    const there = await gateway();
    const asking = apiAskingKey('alice:s2', t.keyPrefix);
    const first = ask(here, 's2');
    await until(async () => here.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    const busy = await ask(there, 's2');
    expect(busy.status).toBe(409);
    expect(busy.headers.get('x-should-retry')).toBe('false');
    expect(await busy.json()).toMatchObject({ error: { code: 'session_busy' } });
    expect(there.waiting()).toBe(0);
    // Another session of the user, and a command of this one, are not held up.
    const other = ask(there, 's3');
    await until(() => there.waiting() === 1);
    await there.send({ chatId: 'alice:s3' }, { text: 'other answer', mode: 'formatted', answersTurn: true });
    expect((await (await other).json() as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe('other answer');

    await there.send({ chatId: 'alice:s2' }, { text: 'first answer', mode: 'formatted', answersTurn: true });
    expect((await (await first).json() as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe('first answer');
    await until(async () => (await t.redis.exists(asking)) === 0);
    // Free again: the other gateway's request is taken; its client going away frees the session for the first gateway.
    const abort = new AbortController();
    void Promise.resolve(there.app.request('/v1/chat/completions', { ...askInit('s2'), signal: abort.signal })).catch(() => undefined);
    await until(async () => there.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    abort.abort();
    await until(async () => (await t.redis.exists(asking)) === 0);
    const next = ask(here, 's2');
    await until(async () => (await t.redis.get(asking)) !== null);
    await here.send({ chatId: 'alice:s2' }, { text: 'next answer', mode: 'formatted', answersTurn: true });
    expect((await (await next).json() as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe('next answer');
  });

  it('keeps a live request of another gateway marked when an abandoned request of its chat is answered here', async () => {
    const sink = createLogSink();
    const here = await gateway(sink.logger);
    const there = await gateway();
    const asking = apiAskingKey('alice:s5', t.keyPrefix);
    // R1 waits here; its client goes away, which frees the session (R1 stays in line here, orphaned).
    const abort = new AbortController();
    void Promise.resolve(here.app.request('/v1/chat/completions', { ...askInit('s5'), signal: abort.signal })).catch(() => undefined);
    await until(async () => here.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    abort.abort();
    await until(async () => (await t.redis.exists(asking)) === 0);
    // R2 of the same chat waits on the other gateway.
    const second = ask(there, 's5');
    await until(async () => there.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    // R1's answer is delivered here: dropped, and its request leaves the line.
    await here.send({ chatId: 'alice:s5' }, { text: 'abandoned answer', mode: 'formatted', answersTurn: true });
    await until(() => here.waiting() === 0);
    expect(sink.lines.filter((line) => line.msg.startsWith('api answer dropped: its request went away'))).toHaveLength(1);
    // R2's answer is delivered here too: R2 still waits on the other gateway, so it is relayed to it.
    await here.send({ chatId: 'alice:s5' }, { text: 'live answer', mode: 'formatted', answersTurn: true });
    expect(sink.lines.filter((line) => line.msg.startsWith('api answer dropped: no request waits'))).toEqual([]);
    expect(await contentOf(second)).toBe('live answer');
    await until(async () => (await t.redis.exists(asking)) === 0);
  });

  it('matches a turn\'s answer to its request by the messages it followed: an abandoned request\'s answer goes to it, not to the next request', async () => {
    // The transcript as the gateway reads it: which messages each answer followed.
    const followed = new Map<string, ReadonlySet<string>>();
    const answeredBy = async (_sessionId: string, replyId: string) => followed.get(replyId) ?? null;
    const sink = createLogSink();
    const [here, there] = [await gateway(sink.logger, answeredBy), await gateway(createLogSink().logger, answeredBy)];
    const asking = apiAskingKey('alice:s9', t.keyPrefix);
    const abort = new AbortController();
    void Promise.resolve(here.app.request('/v1/chat/completions', { ...askInit('s9', 'hi', 'r1'), signal: abort.signal })).catch(() => undefined);
    await until(async () => here.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    abort.abort();
    await until(async () => (await t.redis.exists(asking)) === 0);
    const next = there.app.request('/v1/chat/completions', askInit('s9', 'hi', 'r2'));
    await until(async () => there.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    // The abandoned answer is delivered where the next request waits: relayed to its own request, dropped there.
    followed.set('reply-old-0', new Set(['api:alice:s9:r1']));
    await there.send({ chatId: 'alice:s9' }, { text: 'old answer', mode: 'formatted', answersTurn: true, deliveryId: 'reply-old-0#0' });
    await sink.waitFor((line) => line.msg.startsWith('api answer dropped: its request went away'));
    followed.set('reply-new-0', new Set(['api:alice:s9:r1', 'api:alice:s9:r2']));
    await here.send({ chatId: 'alice:s9' }, { text: 'new answer', mode: 'formatted', answersTurn: true, deliveryId: 'reply-new-0#0' });
    expect(await contentOf(next)).toBe('new answer');
  });

  it('relays an approval question with the messages it names: only the request among them takes it', async () => {
    const [here, there] = [await gateway(), await gateway()];
    const asking = apiAskingKey('alice:s10', t.keyPrefix);
    const next = there.app.request('/v1/chat/completions', askInit('s10', 'hi', 'r2'));
    await until(async () => there.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    // An abandoned request's turn asks: relayed, and no answer of the request waiting there.
    const question = (text: string, answers: string[]) => ({ text, mode: 'formatted' as const, choices: [{ label: 'Approve', command: '/approve a1' }], answers });
    await here.send({ chatId: 'alice:s10' }, question('old question', ['api:alice:s10:r1']));
    await here.send({ chatId: 'alice:s10' }, question('its question', ['api:alice:s10:r1', 'api:alice:s10:r2']));
    expect(await contentOf(next)).toBe('its question');
  });

  it('relays how many questions a round asks: the request waits for the question another gateway delivers', async () => {
    const [here, there] = [await gateway(), await gateway()];
    const response = here.app.request('/v1/chat/completions', askInit('s11', 'hi', 'r1'));
    await until(async () => here.waiting() === 1 && (await t.redis.exists(apiAskingKey('alice:s11', t.keyPrefix))) === 1);
    const question = (id: string) => ({ text: `question ${id}`, mode: 'formatted' as const, choices: [{ label: 'Approve', command: `/approve ${id}` }], questions: 2, answers: ['api:alice:s11:r1'] });
    await here.send({ chatId: 'alice:s11' }, question('a1'));
    await there.send({ chatId: 'alice:s11' }, question('a2'));
    expect(await contentOf(response)).toBe('question a1\n\nquestion a2');
  });

  it('answers a command across gateways, and a command holds no request of its session up', async () => {
    const [here, there, third] = [await gateway(), await gateway(), await gateway()];
    const asking = apiAskingKey('alice:s6', t.keyPrefix);
    // Alone, a command's request claims the session, so its answer finds it from another gateway.
    const usage = ask(there, 's6', '/usage');
    await until(async () => there.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    await here.send({ chatId: 'alice:s6' }, { text: 'usage figures', mode: 'formatted' });
    expect(await contentOf(usage)).toBe('usage figures');
    await until(async () => (await t.redis.exists(asking)) === 0);
    // A request for a turn takes the session from a waiting command; the command is not refused while it waits either.
    const status = ask(there, 's6', '/status');
    await until(async () => there.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    const turn = ask(here, 's6');
    await until(async () => here.waiting() === 1 && !(await t.redis.get(asking))!.startsWith('~'));
    await third.send({ chatId: 'alice:s6' }, { text: 'status figures', mode: 'formatted' });
    expect(await contentOf(status)).toBe('status figures');
    const stop = ask(third, 's6', '/stop');
    await until(() => third.waiting() === 1);
    expect((await ask(third, 's6')).status).toBe(409);
    await there.send({ chatId: 'alice:s6' }, { text: 'stopped', mode: 'formatted' });
    expect(await contentOf(stop)).toBe('stopped');
    await third.send({ chatId: 'alice:s6' }, { text: 'turn answer', mode: 'formatted', answersTurn: true });
    expect(await contentOf(turn)).toBe('turn answer');
    await until(async () => (await t.redis.exists(asking)) === 0);
  });

  it('relays a command\'s notice from a gateway where a request waits for a turn to the gateway where the command waits', async () => {
    const sink = createLogSink();
    const [here, there] = [await gateway(sink.logger), await gateway()];
    const asking = apiAskingKey('alice:s8', t.keyPrefix);
    const turn = ask(here, 's8');
    await until(async () => here.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    // A command answered in the background (the stub ingest answers no command in place), sent to the other gateway.
    const compact = ask(there, 's8', '/compact');
    await until(() => there.waiting() === 1);
    await here.send({ chatId: 'alice:s8' }, { text: 'compacted', mode: 'formatted' });
    expect(await contentOf(compact)).toBe('compacted');
    expect(sink.lines.filter((line) => line.msg.includes('not shown'))).toEqual([]);
    await here.send({ chatId: 'alice:s8' }, { text: 'turn answer', mode: 'formatted', answersTurn: true });
    expect(await contentOf(turn)).toBe('turn answer');
  });

  it('keeps a command\'s request findable from another gateway after the request that held the session let it go', async () => {
    const sink = createLogSink();
    const [here, there] = [await gateway(sink.logger), await gateway()];
    const asking = apiAskingKey('alice:s11', t.keyPrefix);
    const turn = ask(here, 's11');
    await until(async () => here.waiting() === 1 && (await t.redis.exists(asking)) === 1);
    // The command's claim yields to the turn's request, which then gets its answer and lets the session go.
    const compact = ask(there, 's11', '/compact');
    await until(() => there.waiting() === 1);
    await here.send({ chatId: 'alice:s11' }, { text: 'turn answer', mode: 'formatted', answersTurn: true });
    expect(await contentOf(turn)).toBe('turn answer');
    await until(async () => (await t.redis.get(asking)) === null);
    // The command's answer, delivered here, still finds its request there.
    await here.send({ chatId: 'alice:s11' }, { text: 'compacted', mode: 'formatted' });
    expect(await contentOf(compact)).toBe('compacted');
    expect(sink.lines.filter((line) => line.msg.includes('dropped'))).toEqual([]);
  });

  it('claims: a yielding claim gives way to one that does not, and comes back when the session is free', async () => {
    const relay = createRedisReplyRelay(t.redis, t.keyPrefix);
    const asking = apiAskingKey('alice:s7', t.keyPrefix);
    expect(await relay.claim('alice:s7', 'cmd', true)).toBe(true);
    expect(await relay.claim('alice:s7', 'cmd2', true)).toBe(false);
    expect(await relay.claim('alice:s7', 'turn')).toBe(true);
    expect(await relay.claim('alice:s7', 'cmd', true)).toBe(false);
    expect(await relay.claim('alice:s7', 'turn2')).toBe(false);
    await relay.unclaim('alice:s7', 'cmd');
    expect(await t.redis.get(asking)).toBe('turn');
    await relay.unclaim('alice:s7', 'turn');
    expect(await relay.claim('alice:s7', 'cmd', true)).toBe(true);
    expect(await t.redis.get(asking)).toBe('~cmd');
    await relay.unclaim('alice:s7', 'cmd');
    expect(await t.redis.exists(asking)).toBe(0);
  });

  it('drops an answer no request waits for, with a log line', async () => {
    const sink = createLogSink();
    const there = await gateway(sink.logger);
    await there.send({ chatId: 'alice:gone' }, { text: 'nobody reads this', mode: 'formatted', answersTurn: true });
    const line = await sink.waitFor((l) => l.msg.startsWith('api answer dropped'));
    expect(line).toMatchObject({ chatId: 'alice:gone', channel: 'api' });
    expect(JSON.stringify(sink.lines)).not.toContain(KEY);
  });

  it('passes an answer on from a gateway without the API to the request waiting here, and drops one nobody waits for', async () => {
    const here = await gateway();
    const sink = createLogSink();
    const keyless = createApiAnswerRelay({ redis: t.redis, log: sink.logger }, { keyPrefix: t.keyPrefix });
    const response = ask(here, 's12');
    await until(async () => here.waiting() === 1 && (await t.redis.exists(apiAskingKey('alice:s12', t.keyPrefix))) === 1);
    await keyless.send({ chatId: 'alice:s12' }, { text: 'from a gateway without keys', mode: 'formatted', answersTurn: true });
    expect(await contentOf(response)).toBe('from a gateway without keys');
    await keyless.send({ chatId: 'alice:gone' }, { text: 'nobody reads this', mode: 'formatted', answersTurn: true });
    expect(await sink.waitFor((l) => l.msg.startsWith('api answer dropped'))).toMatchObject({ chatId: 'alice:gone', channel: 'api' });
  });
});
