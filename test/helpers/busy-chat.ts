/**
 * The busy-mode tests' chats: one driven through the web chat's HTTP API (as the page uses it), one
 * through the fake Telegram, and the tool loop their fake model runs while a second message arrives.
 */
import { afterEach, expect } from 'vitest';
import { createWebChannel } from '../../channels/web/index.js';
import { messageText, type ChatMessage } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import type { FakeHandler, FakeReply } from '../fakes/openai-server.js';
import { startStack, type Stack, type StackOptions } from './stack.js';
import { useTelegramFixture } from './telegram-stack.js';
import { pollUntil } from './waits.js';

/** The message that starts the turn. */
export const FIRST = 'deploy the release';
/** The message sent while the turn runs. */
export const SECOND = 'wait: use the staging database';

/** A chat as the test drives it: send a message, read what the bot sent, in order. */
export interface ChatDriver {
  stack: Stack;
  sessionId: string;
  send(text: string): Promise<void>;
  replies(): Promise<string[]>;
}

/** Opens a chat on a new stack started with `options` (its channels are the driver's); `conversation` names the web chat's conversation. */
export type OpenChat = (options: StackOptions, conversation: string) => Promise<ChatDriver>;

/**
 * The agent's side: three rounds of `current_time`, then an answer naming every user message it read
 * (`Done. I read: …`). The first call, for {@link FIRST}, is answered by `first`; a side question by `Aside: …`.
 */
export function toolLoop(first: () => Promise<FakeReply> | FakeReply): FakeHandler {
  return (request) => {
    const tools = request.messages.filter((m) => m.role === 'tool').length;
    const last = userTexts(request.messages).at(-1) ?? '';
    if (last.startsWith('[Side question')) return { content: `Aside: you asked to ${userTexts(request.messages)[0]}.` };
    if (request.messages.at(-1)?.role === 'user' && userTexts(request.messages).at(-1) === FIRST && tools === 0) return first();
    if (tools < 3) return { toolCalls: [{ name: 'current_time', arguments: {} }] };
    return { content: `Done. I read: ${userTexts(request.messages).join(' | ')}` };
  };
}

/** The texts of the user messages, in order. */
export function userTexts(messages: readonly ChatMessage[]): string[] {
  return messages.filter((m) => m.role === 'user').map((m) => messageText(m));
}

/**
 * Registers the fixtures of the calling file (a fake Telegram per test, the web chat's stack closed
 * after each test) and returns the two ways to open a chat, named for `describe.each`.
 */
export function useChatDrivers(): Array<[string, OpenChat]> {
  const tg = useTelegramFixture();
  let web: Stack | undefined;
  afterEach(async () => {
    await web?.close();
    web = undefined;
  });
  const webDriver: OpenChat = async (options, conversation) => {
    const channel = createWebChannel({});
    web = await startStack({ ...options, channels: { list: [channel], mount: (app) => app.route('/', channel.app) } });
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
  };
  const telegramDriver: OpenChat = async (options) => {
    const stack = await tg.start(options);
    return {
      stack, sessionId: 'telegram:42',
      async send(text) {
        tg.telegram.pushMessage({ text, from: { id: 42, is_bot: false, first_name: 'Ada' }, chat: { id: 42, type: 'private', first_name: 'Ada' } });
      },
      async replies() {
        return tg.sent();
      },
    };
  };
  return [['the web chat', webDriver], ['Telegram', telegramDriver]];
}

/** Resolves once the chat shows a reply for which `test` holds. */
export async function replyMatching(chat: ChatDriver, test: (text: string) => boolean): Promise<void> {
  await pollUntil(async () => (await chat.replies()).some(test), { timeoutMs: 20_000, intervalMs: 50 });
}

/** Sends `text` once the turn's first model call is waiting, and waits until the message is in the session's inbox. */
export async function sendDuringTurn(chat: ChatDriver, text: string): Promise<void> {
  await chat.stack.llm.waitForRequest(() => true);
  await chat.send(text);
  const keys = sessionKeys(chat.sessionId, chat.stack.t.keyPrefix);
  await pollUntil(async () => (await chat.stack.t.redis.lrange(keys.inbox, 0, -1)).some((item) => item.includes(text)));
}

/** The chat's transcript messages in order: `user:<text>` for user messages, the role for the others. */
export async function transcriptRoles(chat: ChatDriver): Promise<string[]> {
  const transcript = await readTranscript(chat.stack.t.redis, sessionKeys(chat.sessionId, chat.stack.t.keyPrefix));
  return transcript.flatMap((e) => (e.type === 'message' ? [`${e.message.role}${e.message.role === 'user' ? `:${messageText(e.message)}` : ''}`] : []));
}
