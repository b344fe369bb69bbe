/**
 * Busy modes through the whole stack, on the web chat (its HTTP API, as the page uses it) and on the
 * fake Telegram: a message sent while a 3-round tool loop runs joins the turn (`steer`, the default),
 * waits for its own turn (`/mode queue`), or stops the turn and is answered instead (`/mode interrupt`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createWebChannel } from '../../channels/web/index.js';
import { messageText, type ChatMessage } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import type { FakeHandler, FakeReply, FakeRequest } from '../fakes/openai-server.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { useTelegramFixture } from '../helpers/telegram-stack.js';
import { pollUntil } from '../helpers/waits.js';

const FIRST = 'deploy the release';
const SECOND = 'wait: use the staging database';

/** A chat as the test drives it: send a message, read what the bot sent, in order. */
interface ChatDriver {
  stack: Stack;
  sessionId: string;
  send(text: string): Promise<void>;
  replies(): Promise<string[]>;
}

/** The agent's side: three rounds of `current_time`, then an answer naming every user message it read. The first call waits for `gate`. */
function toolLoop(first: () => Promise<FakeReply> | FakeReply): FakeHandler {
  return (request) => {
    const tools = request.messages.filter((m) => m.role === 'tool').length;
    const last = userTexts(request.messages).at(-1) ?? '';
    if (last.startsWith('[Side question')) return { content: `Aside: you asked to ${userTexts(request.messages)[0]}.` };
    if (request.messages.at(-1)?.role === 'user' && userTexts(request.messages).at(-1) === FIRST && tools === 0) return first();
    if (tools < 3) return { toolCalls: [{ name: 'current_time', arguments: {} }] };
    return { content: `Done. I read: ${userTexts(request.messages).join(' | ')}` };
  };
}

function userTexts(messages: readonly ChatMessage[]): string[] {
  return messages.filter((m) => m.role === 'user').map((m) => messageText(m));
}

function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => { open = resolve; });
  return { promise, open };
}

const tg = useTelegramFixture();
let web: Stack | undefined;
afterEach(async () => {
  await web?.close();
  web = undefined;
});

async function webDriver(handler: FakeHandler, conversation: string): Promise<ChatDriver> {
  const channel = createWebChannel({});
  web = await startStack({ channels: { list: [channel], mount: (app) => app.route('/', channel.app) }, handler });
  const stack = web;
  let n = 0;
  const seen: string[] = [];
  let after = '';
  return {
    stack, sessionId: `web:${conversation}`,
    async send(text) {
      const res = await fetch(`${stack.gateway.httpUrl}/api/chat/${conversation}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, clientMessageId: `m${++n}` }) });
      expect(res.status).toBeLessThan(300);
    },
    async replies() {
      const poll = (await (await fetch(`${stack.gateway.httpUrl}/api/chat/${conversation}/messages?after=${encodeURIComponent(after)}&timeoutMs=0`)).json()) as { messages: Array<{ text: string }>; next: string };
      seen.push(...poll.messages.map((m) => m.text));
      after = poll.next;
      return [...seen];
    },
  };
}

async function telegramDriver(handler: FakeHandler): Promise<ChatDriver> {
  const stack = await tg.start({ handler });
  return {
    stack, sessionId: 'telegram:42',
    async send(text) {
      tg.telegram.pushMessage({ text, from: { id: 42, is_bot: false, first_name: 'Ada' }, chat: { id: 42, type: 'private', first_name: 'Ada' } });
    },
    async replies() {
      return tg.sent();
    },
  };
}

const DRIVERS: Array<[string, (handler: FakeHandler, name: string) => Promise<ChatDriver>]> = [
  ['the web chat', (handler, name) => webDriver(handler, name)],
  ['Telegram', (handler) => telegramDriver(handler)],
];

async function replyMatching(chat: ChatDriver, test: (text: string) => boolean): Promise<void> {
  await pollUntil(async () => (await chat.replies()).some(test), { timeoutMs: 20_000, intervalMs: 50 });
}

/** Sends `text` once the turn's first model call is waiting, and waits until the message is in the session's inbox. */
async function sendDuringTurn(chat: ChatDriver, text: string): Promise<void> {
  await chat.stack.llm.waitForRequest(() => true);
  await chat.send(text);
  const keys = sessionKeys(chat.sessionId, chat.stack.t.keyPrefix);
  await pollUntil(async () => (await chat.stack.t.redis.lrange(keys.inbox, 0, -1)).some((item) => item.includes(SECOND)));
}

describe.each(DRIVERS)('busy modes on %s', (_name, open) => {
  it('steer (the default): a message sent during the tool loop is read at the next model call and answered in the same turn', async () => {
    const held = gate();
    const chat = await open(toolLoop(async () => {
      await held.promise;
      return { toolCalls: [{ name: 'current_time', arguments: {} }] };
    }), 'steer');
    await chat.send(FIRST);
    await sendDuringTurn(chat, SECOND);
    held.open();
    await replyMatching(chat, (t) => t.startsWith('Done.'));

    const requests = chat.stack.agentRequests();
    expect(requests).toHaveLength(4);
    // The second call sees the message right after the first round's tool result, in order.
    const second = requests[1]!.messages;
    expect(second.at(-2)?.role).toBe('tool');
    expect(second.at(-1)).toMatchObject({ role: 'user' });
    expect(messageText(second.at(-1)!)).toBe(SECOND);
    expect(requests[0]!.messages.some((m) => m.role === 'user' && messageText(m) === SECOND)).toBe(false);
    const replies = (await chat.replies()).filter((t) => t.startsWith('Done.'));
    expect(replies).toEqual([`Done. I read: ${FIRST} | ${SECOND}`]);
    // The transcript holds the steered message once, where the model saw it: after the first round.
    const transcript = await readTranscript(chat.stack.t.redis, sessionKeys(chat.sessionId, chat.stack.t.keyPrefix));
    const roles = transcript.filter((e) => e.type === 'message').map((e) => (e.type === 'message' ? `${e.message.role}${e.message.role === 'user' ? `:${messageText(e.message)}` : ''}` : ''));
    expect(roles).toEqual([`user:${FIRST}`, 'assistant', 'tool', `user:${SECOND}`, 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    await pollUntil(async () => (await chat.stack.t.redis.llen(sessionKeys(chat.sessionId, chat.stack.t.keyPrefix).processing)) === 0);
  });

  it('queue (/mode queue): the message waits for its own turn, as before', async () => {
    const held = gate();
    const chat = await open(toolLoop(async () => {
      await held.promise;
      return { toolCalls: [{ name: 'current_time', arguments: {} }] };
    }), 'queue');
    await chat.send('/mode queue');
    await replyMatching(chat, (t) => t.includes('queue'));
    await chat.send(FIRST);
    await sendDuringTurn(chat, SECOND);
    held.open();
    await replyMatching(chat, (t) => t.includes(SECOND) && t.startsWith('Done.'));
    const replies = (await chat.replies()).filter((t) => t.startsWith('Done.'));
    expect(replies).toEqual([`Done. I read: ${FIRST}`, `Done. I read: ${FIRST} | ${SECOND}`]);
    const requests = chat.stack.agentRequests();
    expect(requests.slice(0, 4).every((r: FakeRequest) => !userTexts(r.messages).includes(SECOND))).toBe(true);
  });

  it('interrupt (/mode interrupt): the running turn stops and the new message is answered', async () => {
    const chat = await open(toolLoop(() => ({ hold: new Promise<FakeReply>(() => undefined) })), 'interrupt');
    await chat.send('/mode interrupt');
    await replyMatching(chat, (t) => t.includes('interrupt'));
    await chat.send(FIRST);
    await chat.stack.llm.waitForRequest(() => true);
    await chat.send(SECOND);
    await replyMatching(chat, (t) => t.startsWith('Done.'));
    const replies = await chat.replies();
    expect(replies).toContain('Stopped.');
    expect(replies.filter((t) => t.startsWith('Done.'))).toEqual([`Done. I read: ${FIRST} | ${SECOND}`]);
    expect(replies.indexOf('Stopped.')).toBeLessThan(replies.findIndex((t) => t.startsWith('Done.')));
  });

  it('/btw: a side question is answered from the context while the turn runs, and enters neither the turn nor the history', async () => {
    const held = gate();
    const chat = await open(toolLoop(async () => {
      await held.promise;
      return { toolCalls: [{ name: 'current_time', arguments: {} }] };
    }), 'btw');
    await chat.send(FIRST);
    await chat.stack.llm.waitForRequest(() => true);
    await chat.send('/btw what did I ask for?');
    // Answered while the turn's first model call still waits.
    await replyMatching(chat, (t) => t.startsWith('Aside:'));
    expect((await chat.replies()).filter((t) => t.startsWith('Aside:'))).toEqual([`Aside: you asked to ${FIRST}.`]);
    held.open();
    await replyMatching(chat, (t) => t.startsWith('Done.'));
    expect((await chat.replies()).filter((t) => t.startsWith('Done.'))).toEqual([`Done. I read: ${FIRST}`]);
    const turnRequests = chat.stack.agentRequests().filter((r) => !userTexts(r.messages).at(-1)?.startsWith('[Side question'));
    expect(turnRequests.every((r) => userTexts(r.messages).every((text) => !text.includes('what did I ask for')))).toBe(true);
    const transcript = await readTranscript(chat.stack.t.redis, sessionKeys(chat.sessionId, chat.stack.t.keyPrefix));
    expect(JSON.stringify(transcript)).not.toContain('what did I ask for');
  });
});
