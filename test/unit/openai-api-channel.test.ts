/**
 * The OpenAI-compatible API channel without a gateway: what is new in a request (the documented
 * rule), the waiter's answer and streamed text, and the HTTP answers the channel gives by itself
 * (503 when the gateway cannot take the message, 409 while the session waits, 401, 400).
 */
import { describe, expect, it, vi } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { createOpenAiApiChannel } from '../../channels/openai-api/index.js';
import { newInput, sessionNameOf, toCompletionRequest } from '../../channels/openai-api/request.js';
import { ROUND_WAIT_MS, Waiter, Waiters } from '../../channels/openai-api/waiter.js';

const KEY = 'sk-test-0123456789abcdef';
const user = (content: unknown) => ({ role: 'user', content });
const assistant = (content: string) => ({ role: 'assistant', content });

describe('newInput (what is new in a request)', () => {
  it.each([
    ['only the newest message', [user('hi')], 'hi'],
    ['the trailing user messages after the last answer', [user('a'), assistant('b'), user('c'), user('d')], 'c\n\nd'],
    ['after a tool result too', [user('a'), { role: 'assistant', content: null }, { role: 'tool', content: 'r' }, user('e')], 'e'],
    ['system and developer messages are ignored', [{ role: 'system', content: 's' }, user('a'), { role: 'developer', content: 'd' }], 'a'],
    ['text parts are joined', [user([{ type: 'text', text: 'x' }, { type: 'text', text: 'y' }])], 'x\ny'],
  ])('%s', (_name, messages, text) => {
    expect(newInput(messages as never)).toEqual({ text });
  });

  it.each([
    ['ends with an answer', [user('a'), assistant('b')]],
    ['has only blank user text', [user('  ')]],
    ['has an image part', [user([{ type: 'image_url', image_url: { url: 'https://x/y.png' } }])]],
    ['has an unknown role', [{ role: 'function', content: 'f' }]],
  ])('refuses a request that %s', (_name, messages) => {
    expect(newInput(messages as never)).toMatchObject({ message: expect.any(String), param: expect.stringMatching(/^messages/) });
  });
});

describe('toCompletionRequest and sessionNameOf', () => {
  it('reads stream, usage, the session fields; names the field of a bad body', () => {
    expect(toCompletionRequest({ model: 'm', messages: [user('q')], stream: true, stream_options: { include_usage: true }, metadata: { session: 'm1' }, user: 'u' }))
      .toEqual({ model: 'm', stream: true, includeUsage: true, text: 'q', session: 'm1' });
    expect(toCompletionRequest({ messages: 'nope' })).toMatchObject({ param: 'messages' });
    expect(toCompletionRequest({ messages: [user('q')], n: 2 })).toMatchObject({ param: 'n' });
    expect(sessionNameOf(' h1 ', { session: 'b' })).toBe('h1');
    expect(sessionNameOf(undefined, {})).toBe('default');
    expect(sessionNameOf(undefined, { session: 'a/b' })).toBeNull();
  });
});

describe('Waiters', () => {
  const item = (text: string, answersTurn = false, asks = false) => ({ text, answersTurn, asks });

  it('a turn ends at its answer (or a question), a command at its notice; deliveries before the verdict count', async () => {
    const waiters = new Waiters();
    const turn = new Waiter('m1');
    waiters.add('c', turn);
    expect(waiters.deliver('c', item('compacted'))).toBe('kept');
    expect(waiters.deliver('c', item('answer', true))).toBe('kept');
    waiters.decide('c', turn, 'turn');
    await expect(turn.answer).resolves.toBe('answer');
    waiters.remove('c', turn);
    const command = new Waiter('m2');
    waiters.add('c', command);
    waiters.decide('c', command, 'command');
    // Nothing is kept from before: the compaction notice is not the command's answer.
    expect(waiters.deliver('c', item('late answer of an old turn', true))).toBe('unwanted');
    expect(waiters.deliver('c', item('usage'))).toBe('answered');
    await expect(command.answer).resolves.toBe('usage');
  });

  it('an orphan keeps its place: its answer is dropped, the next request gets its own', async () => {
    const waiters = new Waiters();
    const gone = new Waiter('m1');
    waiters.add('c', gone);
    waiters.decide('c', gone, 'turn');
    gone.orphan();
    expect(waiters.busy('c')).toBe(false);
    const next = new Waiter('m2');
    waiters.add('c', next);
    waiters.decide('c', next, 'turn');
    expect(waiters.busy('c')).toBe(true);
    expect(waiters.deliver('c', item('old answer', true))).toBe('orphaned');
    waiters.remove('c', gone);
    expect(waiters.deliver('c', item('approve?', false, true))).toBe('answered');
    await expect(next.answer).resolves.toBe('approve?');
  });

  it('an answer that covers both an orphan and the next request (one turn took both) answers the next request', async () => {
    const waiters = new Waiters();
    const gone = new Waiter('m1');
    const next = new Waiter('m2');
    for (const waiter of [gone, next]) {
      waiters.add('c', waiter);
      waiters.decide('c', waiter, 'turn');
    }
    gone.orphan();
    expect(waiters.awaitsTurn('c')).toBe(true);
    expect(waiters.deliver('c', { ...item('both', true), replyId: 'reply-x-0' }, new Set(['m0', 'm1', 'm2']))).toBe('answered');
    await expect(next.answer).resolves.toBe('both');
    await expect(gone.answer).resolves.toBe('both');
  });

  it('a turn\'s answer goes only to the requests whose messages it followed; a resumed turn\'s to the /approve requests it names', async () => {
    const waiters = new Waiters();
    const next = new Waiter('m2');
    waiters.add('c', next);
    // An answer that arrives before the verdict is kept with the messages it followed.
    expect(waiters.deliver('c', { ...item('old answer', true), replyId: 'reply-a-0' }, new Set(['m0', 'm1']))).toBe('kept');
    waiters.decide('c', next, 'turn');
    expect(next.finished).toBe(false);
    expect(waiters.deliver('c', { ...item('another old answer', true), replyId: 'reply-b-0' }, new Set(['m1']))).toBe('unwanted');
    expect(waiters.deliver('c', { ...item('own answer', true), replyId: 'reply-c-0' }, new Set(['m1', 'm2']))).toBe('answered');
    await expect(next.answer).resolves.toBe('own answer');
    waiters.remove('c', next);
    const gone = new Waiter('m3');
    const approve = new Waiter('m4');
    for (const waiter of [gone, approve]) {
      waiters.add('c', waiter);
      waiters.decide('c', waiter, 'resumed');
    }
    gone.orphan();
    // Not the answer of the turn these decisions resumed: no one's here.
    expect(waiters.deliver('c', { ...item('other answer', true), replyId: 'reply-d-0' }, new Set(['m1', 'm2']))).toBe('unwanted');
    expect(waiters.deliver('c', { ...item('resumed answer', true), replyId: 'reply-e-0' }, new Set(['m1', 'approval:a1', 'm3', 'approval:a2', 'm4']))).toBe('answered');
    await expect(approve.answer).resolves.toBe('resumed answer');
  });

  it('keeps an answer for a request whose verdict is not known yet when it names it, though another request took it', async () => {
    const waiters = new Waiters();
    const turn = new Waiter('m1');
    const approve = new Waiter('m2');
    waiters.add('c', turn);
    waiters.decide('c', turn, 'turn');
    waiters.add('c', approve);
    expect(waiters.deliver('c', { ...item('both', true), replyId: 'reply-a-0' }, new Set(['m1', 'approval:a1', 'm2']))).toBe('answered');
    waiters.decide('c', approve, 'resumed');
    await expect(turn.answer).resolves.toBe('both');
    await expect(approve.answer).resolves.toBe('both');
  });

  it('keeps an answer that names two requests without a verdict for both: the first verdict does not take it from the second', async () => {
    const waiters = new Waiters();
    const gone = new Waiter('m2');
    const approve = new Waiter('m3');
    for (const waiter of [gone, approve]) waiters.add('c', waiter);
    // The resumed turn answers before either `/approve` has its verdict.
    expect(waiters.deliver('c', { ...item('resumed answer', true), replyId: 'reply-a-0' }, new Set(['m1', 'approval:a1', 'm2', 'approval:a2', 'm3']))).toBe('kept');
    gone.orphan();
    waiters.decide('c', gone, 'resumed');
    waiters.decide('c', approve, 'resumed');
    await expect(approve.answer).resolves.toBe('resumed answer');
  });

  it('a round of two questions answers with both, a blank line apart, before or after the verdict; one delivered twice counts once', async () => {
    const question = (text: string) => ({ ...item(text, false, true), questions: 2, answers: ['m1'] });
    const covered = new Set(['m1']);
    const waiters = new Waiters();
    const turn = new Waiter('m1');
    waiters.add('c', turn);
    expect(waiters.deliver('c', question('q1'), covered)).toBe('kept');
    expect(waiters.deliver('c', question('q1'), covered)).toBe('kept');
    waiters.decide('c', turn, 'turn');
    expect(turn.finished).toBe(false);
    expect(waiters.deliver('c', question('q2'), covered)).toBe('answered');
    await expect(turn.answer).resolves.toBe('q1\n\nq2');
    waiters.remove('c', turn);
    // Both before the verdict: it takes both.
    const streamed: string[] = [];
    const next = new Waiter('m1', (delta) => streamed.push(delta));
    waiters.add('c', next);
    for (const text of ['q3', 'q4']) waiters.deliver('c', question(text), covered);
    waiters.decide('c', next, 'turn');
    await expect(next.answer).resolves.toBe('q3\n\nq4');
    expect(streamed.join('')).toBe('q3\n\nq4');
  });

  it('a round whose other question never comes (its delivery failed for good) answers with those that came once ROUND_WAIT_MS passed', async () => {
    vi.useFakeTimers();
    try {
      const question = (text: string) => ({ ...item(text, false, true), questions: 3, answers: ['m1'] });
      const waiters = new Waiters();
      const streamed: string[] = [];
      const turn = new Waiter('m1', (delta) => streamed.push(delta));
      waiters.add('c', turn);
      waiters.decide('c', turn, 'turn');
      expect(waiters.deliver('c', question('q1'), new Set(['m1']))).toBe('answered');
      expect(waiters.deliver('c', question('q2'), new Set(['m1']))).toBe('answered');
      vi.advanceTimersByTime(ROUND_WAIT_MS - 1);
      expect(turn.finished).toBe(false);
      vi.advanceTimersByTime(1);
      expect(turn.finished).toBe(true);
      const answer = 'q1\n\nq2\n\n(One more question of this round did not arrive. The answer to an /approve or /deny lists the tool calls still waiting.)';
      await expect(turn.answer).resolves.toBe(answer);
      expect(streamed.join('')).toBe(answer);
      // The late one finds the request answered.
      expect(waiters.deliver('c', question('q3'), new Set(['m1']))).toBe('unwanted');
    } finally {
      vi.useRealTimers();
    }
  });

  it('streams the live text once; text after a dropped draft starts a new paragraph', async () => {
    const pieces: string[] = [];
    const waiters = new Waiters();
    const waiter = new Waiter('m1', (delta) => pieces.push(delta));
    waiters.add('c', waiter);
    waiters.decide('c', waiter, 'turn');
    const draft = (text: string) => waiters.draft('c', { liveReplyId: 'reply-a-0', text, answers: ['m1'] });
    draft('Let me');
    draft('Let me check');
    // Another stream's drop changes nothing here.
    waiters.clearDraft('c', 'reply-b-0');
    draft('Let me check the');
    waiters.clearDraft('c', 'reply-a-0');
    draft('It is');
    draft('It is 4');
    waiters.deliver('c', item('It is 4.', true));
    await expect(waiter.answer).resolves.toBe('It is 4.');
    expect(pieces).toEqual(['Let me', ' check', ' the', '\n\nIt is', ' 4', '.']);
  });

  it('streams a request only the live text of a turn that answers its message; a resumed turn\'s to the /approve request it names', async () => {
    const pieces: string[] = [];
    const waiters = new Waiters();
    const gone = new Waiter('m1');
    const next = new Waiter('m2', (delta) => pieces.push(delta));
    for (const waiter of [gone, next]) {
      waiters.add('c', waiter);
      waiters.decide('c', waiter, 'turn');
    }
    gone.orphan();
    waiters.remove('c', gone);
    // The abandoned request's turn writes on another gateway: its text is no one's here.
    expect(waiters.draft('c', { liveReplyId: 'reply-a-0', text: 'the late', answers: ['m1'] })).toBe(false);
    expect(waiters.draft('c', { liveReplyId: 'reply-b-0', text: 'fre', answers: ['m1', 'm2'] })).toBe(true);
    waiters.deliver('c', { ...item('fresh', true), replyId: 'reply-b-0' }, new Set(['m1', 'm2']));
    await expect(next.answer).resolves.toBe('fresh');
    expect(pieces).toEqual(['fre', 'sh']);
    waiters.remove('c', next);
    const approve = new Waiter('m3', (delta) => pieces.push(delta));
    waiters.add('c', approve);
    waiters.decide('c', approve, 'resumed');
    expect(waiters.draft('c', { liveReplyId: 'reply-c-0', text: 'other', answers: ['m2', 'approval:a0'] })).toBe(false);
    expect(waiters.draft('c', { liveReplyId: 'reply-d-0', text: 'done', answers: ['m2', 'approval:a1', 'm3'] })).toBe(true);
    expect(pieces.at(-1)).toBe('done');
  });
});

describe('the API channel over HTTP (no gateway)', () => {
  const post = (app: { request: (path: string, init: RequestInit) => Response | Promise<Response> }, body: unknown, headers: Record<string, string> = {}) =>
    app.request('/v1/chat/completions', { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  it('answers 503 when the gateway cannot take the message, and holds no waiter after it', async () => {
    const channel = createOpenAiApiChannel({}, { keys: [{ key: KEY, user: 'alice' }] });
    await channel.start(async () => {
      throw new Error('redis down');
    });
    const response = await post(channel.app, { model: 'x', messages: [user('hi')] });
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ error: { type: 'server_error', code: 'unavailable' } });
    expect(channel.waiting()).toBe(0);
    await channel.stop();
  });

  it('answers 409 to a second request of a session that waits, 429 with Retry-After to a rate-limited one, and the answer the gateway sends', async () => {
    const taken: InboundMessage[] = [];
    const channel = createOpenAiApiChannel({}, { keys: [{ key: KEY, user: 'alice' }] });
    await channel.start(async (message) => {
      taken.push(message);
      return message.text === 'fast' ? { outcome: 'rate_limited', reason: 'slow down', retryAfterMs: 2500 } : { outcome: 'accepted' };
    });
    const first = post(channel.app, { model: 'x', messages: [user('hi')] }, { 'x-chatgate-session': 's' });
    while (channel.waiting() === 0 || taken.length === 0) await new Promise((resolve) => setImmediate(resolve));
    const second = await post(channel.app, { model: 'x', messages: [user('again')] }, { 'x-chatgate-session': 's' });
    expect(second.status).toBe(409);
    expect(await second.json()).toMatchObject({ error: { code: 'session_busy' } });
    // Sent again at once it would be refused again: the SDKs are told not to retry.
    expect(second.headers.get('x-should-retry')).toBe('false');
    const limited = await post(channel.app, { model: 'x', messages: [user('fast')] }, { 'x-chatgate-session': 'other' });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    expect(limited.headers.get('x-should-retry')).toBeNull();
    expect(taken[0]).toMatchObject({ channel: 'api', chatId: 'alice:s', userId: 'alice', text: 'hi', refusalsAnswered: true });
    await channel.send({ chatId: 'alice:s' }, { text: 'hello **alice**', mode: 'formatted', answersTurn: true });
    const answer = await (await first).json() as { choices: Array<{ message: { content: string } }>; usage: object };
    expect(answer.choices[0]!.message.content).toBe('hello **alice**');
    expect(answer.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
    expect(channel.waiting()).toBe(0);
    await channel.stop();
  });

  it('answers 401 without a key and 400 to a bad session name, before anything is taken', async () => {
    const channel = createOpenAiApiChannel({}, { keys: [{ key: KEY, user: 'alice' }] });
    await channel.start(async () => {
      throw new Error('nothing should be taken');
    });
    expect((await channel.app.request('/v1/models')).status).toBe(401);
    const bad = await post(channel.app, { model: 'x', messages: [user('hi')] }, { 'x-chatgate-session': 'no spaces please' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'invalid_session', param: 'X-Chatgate-Session' } });
    await channel.stop();
  });

  it('a long wait starts the 200 response and keeps it alive with spaces; the JSON follows', async () => {
    const channel = createOpenAiApiChannel({}, { keys: [{ key: KEY, user: 'alice' }], keepAliveMs: 1 });
    await channel.start(async () => ({ outcome: 'accepted' }));
    const response = await post(channel.app, { model: 'x', messages: [user('slow')] });
    // The response started before any answer was there.
    expect(response.status).toBe(200);
    expect(channel.waiting()).toBe(1);
    await channel.send({ chatId: 'alice:default' }, { text: 'at last', mode: 'formatted', answersTurn: true });
    const text = await response.text();
    expect(JSON.parse(text)).toMatchObject({ object: 'chat.completion', choices: [{ message: { content: 'at last' } }] });
    await channel.stop();
  });

  it('a client gone after the long wait\'s 200 started: its answer, when it comes, is dropped without a crash', async () => {
    const channel = createOpenAiApiChannel({}, { keys: [{ key: KEY, user: 'alice' }], keepAliveMs: 1 });
    await channel.start(async () => ({ outcome: 'accepted' }));
    const rejections: unknown[] = [];
    const onRejection = (err: unknown) => rejections.push(err);
    process.on('unhandledRejection', onRejection);
    try {
      const response = await post(channel.app, { model: 'x', messages: [user('slow')] });
      expect(response.status).toBe(200);
      await response.body!.cancel();
      await channel.send({ chatId: 'alice:default' }, { text: 'too late', mode: 'formatted', answersTurn: true });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
      await channel.stop();
    }
  });

  it('a refusal after the long wait\'s 200 started is an insufficient_quota error body', async () => {
    const channel = createOpenAiApiChannel({}, { keys: [{ key: KEY, user: 'alice' }], keepAliveMs: 1 });
    await channel.start(async () => ({ outcome: 'accepted' }));
    const response = await post(channel.app, { model: 'x', messages: [user('slow')] });
    expect(response.status).toBe(200);
    await channel.send({ chatId: 'alice:default' }, { text: "You have used today's budget of 1,000 tokens.", mode: 'formatted', answersTurn: true, refusal: 'over_budget' });
    expect(JSON.parse(await response.text())).toEqual({ error: { message: "You have used today's budget of 1,000 tokens.", type: 'insufficient_quota', param: null, code: 'insufficient_quota' } });
    await channel.stop();
  });

  it('answers 504 when no answer comes within maxWaitMs', async () => {
    const channel = createOpenAiApiChannel({}, { keys: [{ key: KEY, user: 'alice' }], maxWaitMs: 1 });
    await channel.start(async () => ({ outcome: 'accepted' }));
    const response = await post(channel.app, { model: 'x', messages: [user('never answered')] });
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({ error: { code: 'timeout', type: 'server_error' } });
    expect(channel.waiting()).toBe(0);
    await channel.stop();
  });
});
