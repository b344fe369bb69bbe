import { once } from 'node:events';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createTelegramChannel, DEFAULT_TELEGRAM_COMMANDS, type SetAsideUpdate, type TelegramChannel, type TelegramChannelOptions } from '../../channels/telegram/index.js';
import { SET_ASIDE_REPLY } from '../../channels/telegram/set-aside.js';
import { UNSUPPORTED_MEDIA_REPLY } from '../../channels/telegram/translate.js';
import { MAX_USER_NAME_CHARS, type InboundMessage } from '../../src/core/inbound.js';
import { ChannelError } from '../../src/errors.js';
import { createDelivery } from '../../src/outbound/delivery.js';
import { createMemoryDeliveryLedger } from '../../src/outbound/delivery-ledger.js';
import { createTypingIndicators } from '../../src/gateway/typing.js';
import { startFakeTelegram } from '../fakes/telegram-server.js';
import { useFakeServer } from '../helpers/fake-fixture.js';

let channel: TelegramChannel | undefined;
const fake = useFakeServer(() => startFakeTelegram(), async () => {
  await channel?.stop();
  channel = undefined;
});

/** Collects inbound messages; `next()` resolves with the next one. */
function inbox(handler?: (message: InboundMessage) => Promise<void>) {
  const received: InboundMessage[] = [];
  const waiters: Array<() => void> = [];
  const onMessage = async (message: InboundMessage): Promise<void> => {
    if (handler) await handler(message);
    received.push(message);
    waiters.splice(0).forEach((wake) => wake());
  };
  let consumed = 0;
  /** The `count`-th message (1-based), default the next one not yet returned. */
  const next = async (count = consumed + 1): Promise<InboundMessage> => {
    while (received.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    consumed = Math.max(consumed, count);
    return received[count - 1];
  };
  return { received, onMessage, next };
}

async function startChannel(onMessage: (message: InboundMessage) => Promise<void>, options: Partial<TelegramChannelOptions> = {}): Promise<TelegramChannel> {
  channel = createTelegramChannel({}, { token: fake().token, apiRoot: fake().apiRoot, redeliveryDelayMs: 20, ...options });
  await channel.start(onMessage);
  return channel;
}

const deliveryFor = (target: TelegramChannel) => createDelivery({ channels: new Map([['telegram', target]]), ledger: createMemoryDeliveryLedger() });
const reply = (text: string) => ({ id: `r${Math.random()}`, sessionId: 'telegram:42', channel: 'telegram' as const, chatId: '42', text, kind: 'reply' as const });


describe('telegram channel: inbound', () => {
  it('registers the commands, drops a webhook and emits a private message', async () => {
    const { onMessage, next } = inbox();
    await startChannel(onMessage);
    expect(fake().callsOf('setMyCommands')[0].params.commands).toEqual(DEFAULT_TELEGRAM_COMMANDS);
    expect(fake().callsOf('deleteWebhook')).toHaveLength(1);
    const { messageId } = fake().pushMessage({ text: 'hello bot', from: { id: 7, is_bot: false, first_name: 'Ada', last_name: 'L' }, chat: { id: 7, type: 'private' } });
    expect(await next()).toMatchObject({
      id: `telegram:7:${messageId}`, channel: 'telegram', chatId: '7', userId: '7', userName: 'Ada L', text: 'hello bot', attachments: [], chatType: 'private',
    });
  });

  it('cuts a 10,000-character sender name to MAX_USER_NAME_CHARS code points, so the name cannot pass the text limit', async () => {
    const { onMessage, next } = inbox();
    await startChannel(onMessage, { groupTrigger: 'always' });
    const group = { id: -100, type: 'supergroup', title: 'G' };
    fake().pushMessage({ chat: group, text: 'hi', from: { id: 9, is_bot: false, first_name: '😀'.repeat(10_000) } });
    const message = await next();
    expect([...message.userName]).toEqual(Array(MAX_USER_NAME_CHARS).fill('😀'));
    expect(message.text).toBe('hi');
  });

  it('gives two updates without a message_id two ids (from their update_id), so neither is dropped as a duplicate', async () => {
    const { onMessage, next } = inbox();
    await startChannel(onMessage);
    const bare = { date: Math.floor(Date.now() / 1000), from: { id: 7, is_bot: false, first_name: 'Ada' }, chat: { id: 7, type: 'private' } };
    const first = fake().pushUpdate({ message: { ...bare, text: 'one' } });
    const second = fake().pushUpdate({ message: { ...bare, text: 'two' } });
    const [a, b] = [await next(), await next()];
    expect([a.text, b.text]).toEqual(['one', 'two']);
    expect([a.id, b.id]).toEqual([`telegram:7:u${first}`, `telegram:7:u${second}`]);
    expect(a.platformMessageId).toBeUndefined();
  });

  it('answers in groups only when mentioned, replied to or commanded', async () => {
    const { onMessage, next, received } = inbox();
    await startChannel(onMessage);
    const group = { id: -100, type: 'supergroup', title: 'G' };
    const mention = `@${fake().botUsername}`;
    fake().pushMessage({ chat: group, text: 'just chatting' });
    fake().pushMessage({ chat: group, text: `${mention} what is 2+2?`, entities: [{ type: 'mention', offset: 0, length: mention.length }] });
    fake().pushMessage({ chat: group, text: 'and 3+3?', reply_to_message: { message_id: 5, date: 0, chat: group, from: { id: fake().botId, is_bot: true, first_name: 'B' }, text: '4' } });
    fake().pushMessage({ chat: group, text: `/usage@${fake().botUsername}`, entities: [{ type: 'bot_command', offset: 0, length: 7 + mention.length }] });
    fake().pushMessage({ chat: group, text: '/usage@other_bot', entities: [{ type: 'bot_command', offset: 0, length: 16 }] });
    await next(3);
    expect(received.map((m) => [m.text, m.chatType, m.replyTo])).toEqual([
      ['what is 2+2?', 'group', undefined],
      ['and 3+3?', 'group', '5'],
      ['/usage', 'group', undefined],
    ]);
  });

  it('maps forum topics to threadId and photo captions to text', async () => {
    const { onMessage, next } = inbox();
    await startChannel(onMessage, { groupTrigger: 'always' });
    const forum = { id: -200, type: 'supergroup', title: 'F', is_forum: true };
    fake().pushMessage({ chat: forum, text: 'in a topic', is_topic_message: true, message_thread_id: 77, reply_to_message: { message_id: 77, date: 0, chat: forum } });
    expect(await next()).toMatchObject({ chatId: '-200', threadId: '77', text: 'in a topic' });
    fake().pushMessage({ caption: 'what is this?', photo: [{ file_id: 'small', file_unique_id: 's', width: 1, height: 1 }, { file_id: 'large', file_unique_id: 'l', width: 9, height: 9 }] });
    expect(await next(2)).toMatchObject({ text: 'what is this?', attachments: [{ kind: 'photo', ref: 'large' }] });
  });

  it('hands media it cannot read to the gateway with the reply to give, sending nothing itself', async () => {
    const { onMessage, next } = inbox();
    await startChannel(onMessage);
    const { messageId } = fake().pushMessage({ sticker: { file_id: 'st', file_unique_id: 'st', type: 'regular', width: 1, height: 1, is_animated: false, is_video: false } });
    expect(await next()).toMatchObject({ id: `telegram:42:${messageId}`, chatId: '42', platformMessageId: String(messageId), text: '', unsupportedReply: UNSUPPORTED_MEDIA_REPLY });
    expect(fake().callsOf('sendMessage')).toEqual([]);
  });

  it('sets aside an update that keeps failing after a few tries, and polls on', async () => {
    const setAside: SetAsideUpdate[] = [];
    let attempts = 0;
    const { onMessage, next } = inbox(async (message) => {
      if (message.text === 'poison') {
        attempts++;
        throw new Error('handler exploded');
      }
    });
    channel = createTelegramChannel({ setAside: async (entry) => { setAside.push(entry); } }, { token: fake().token, apiRoot: fake().apiRoot, redeliveryDelayMs: 20, maxUpdateAttempts: 3 });
    await channel.start(onMessage);
    const poison = fake().pushMessage({ text: 'poison' });
    fake().pushMessage({ text: 'after the poison', from: { id: 43, is_bot: false, first_name: 'Bo' }, chat: { id: 43, type: 'private' } });
    // Its sender is told through the gateway (a message without text carrying the reply), then polling goes on.
    expect(await next()).toMatchObject({ id: `telegram:42:${poison.messageId}:set-aside`, chatId: '42', text: '', unsupportedReply: SET_ASIDE_REPLY, platformMessageId: String(poison.messageId) });
    expect((await next()).text).toBe('after the poison');
    expect(attempts).toBe(3);
    expect(setAside).toEqual([expect.objectContaining({ channel: 'telegram', updateId: poison.updateId, attempts: 3, error: expect.stringContaining('handler exploded') })]);
    expect(JSON.parse(setAside[0].raw)).toMatchObject({ update_id: poison.updateId, message: { text: 'poison' } });
  });

  it('sets aside a malformed update, and polls on', async () => {
    const setAside: SetAsideUpdate[] = [];
    const { onMessage, next } = inbox();
    channel = createTelegramChannel({ setAside: async (entry) => { setAside.push(entry); } }, { token: fake().token, apiRoot: fake().apiRoot, redeliveryDelayMs: 20 });
    await channel.start(onMessage);
    const bad = fake().pushUpdate({ message: { message_id: 1, date: 0, from: { id: 42, is_bot: false, first_name: 'A' }, text: 'no chat at all' } });
    fake().pushMessage({ text: 'still here' });
    expect((await next()).text).toBe('still here');
    expect(setAside.map((entry) => entry.updateId)).toEqual([bad]);
  });

  it('keeps an update that keeps failing when it cannot be set aside (Redis down): nothing is lost', async () => {
    let attempts = 0;
    const { onMessage, next } = inbox(async () => {
      if (++attempts <= 5) throw new Error('redis down');
    });
    channel = createTelegramChannel({ setAside: async () => { throw new Error('redis down'); } }, { token: fake().token, apiRoot: fake().apiRoot, redeliveryDelayMs: 10, maxUpdateAttempts: 2 });
    await channel.start(onMessage);
    fake().pushMessage({ text: 'keep me' });
    expect((await next()).text).toBe('keep me');
    expect(attempts).toBe(6);
  });

  it('re-delivers an update whose handler failed, and confirms it once handled', async () => {
    let attempts = 0;
    const { onMessage, next } = inbox(async () => {
      if (++attempts === 1) throw new Error('redis down');
    });
    await startChannel(onMessage);
    const { updateId } = fake().pushMessage({ text: 'keep me' });
    expect((await next()).text).toBe('keep me');
    expect(attempts).toBe(2);
    // The retry asked for the failed update again (offset = its id), which confirms nothing past it.
    expect(fake().callsOf('getUpdates').map((call) => call.params.offset)).toContain(updateId);
    await channel!.stop();
    expect(fake().pendingUpdateIds()).toEqual([]);
  });
});

describe('telegram channel: outbound', () => {
  it('delivers a long reply in chunks of at most 4096 UTF-16 units, as valid HTML', async () => {
    await startChannel(inbox().onMessage);
    const paragraphs = Array.from({ length: 120 }, (_, i) => `**Step ${i}**: compute a < b && c > d 😀 ${'lorem ipsum '.repeat(6)}`);
    const text = `${paragraphs.join('\n')}\n\`\`\`ts\n${'const x = 1 < 2;\n'.repeat(200)}\`\`\``;
    const result = await deliveryFor(channel!).deliver(reply(text));
    const calls = fake().callsOf('sendMessage');
    expect(calls).toHaveLength(result.chunks);
    expect(result.chunks).toBeGreaterThan(2);
    expect(result.plainFallbacks).toBe(0);
    for (const call of calls) {
      expect(call.params.parse_mode).toBe('HTML');
      expect(String(call.params.text).length).toBeLessThanOrEqual(4096);
    }
    const visible = calls.map((call) => String(call.params.text).replace(/<[^>]+>/g, '')).join('\n');
    expect(visible).toContain('<b>Step 0</b>'.replace(/<[^>]+>/g, ''));
    expect(visible.match(/Step \d+/g)).toHaveLength(120);
    expect(visible.match(/const x = 1 &lt; 2;/g)).toHaveLength(200);
  });

  it('surfaces a 429 at once as a rate-limited ChannelError carrying retry_after (no retry inside the call)', async () => {
    await startChannel(inbox().onMessage);
    fake().failNext('sendMessage', { errorCode: 429, description: 'Too Many Requests: retry after 30', retryAfterSeconds: 30 });
    const error = await deliveryFor(channel!).deliver(reply('hello')).catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'CHANNEL_RATE_LIMITED', retryable: true, retryAfterMs: 30_000 });
    expect((error as Error).message).toBe('sendMessage failed for telegram:42 (429: Too Many Requests: retry after 30, retry after 30 s)');
    expect(fake().callsOf('sendMessage')).toHaveLength(1);
  });

  it('resends as plain text when Telegram cannot parse the HTML', async () => {
    await startChannel(inbox().onMessage);
    fake().failNext('sendMessage', { errorCode: 400, description: "Bad Request: can't parse entities: unsupported start tag" }, { when: (params) => params.parse_mode === 'HTML' });
    const result = await deliveryFor(channel!).deliver(reply('**bold** <tag>'));
    expect(result.plainFallbacks).toBe(1);
    const [formatted, plain] = fake().callsOf('sendMessage');
    expect(formatted.params).toMatchObject({ parse_mode: 'HTML', text: '<b>bold</b> &lt;tag&gt;' });
    expect(plain.params.parse_mode).toBeUndefined();
    expect(plain.params.text).toBe('**bold** <tag>');
  });

  it('turns a blocked bot into a permanent ChannelError without the token', async () => {
    await startChannel(inbox().onMessage);
    fake().failNext('sendMessage', { errorCode: 403, description: 'Forbidden: bot was blocked by the user' });
    const error = await channel!.send({ chatId: '42' }, { text: 'hi', mode: 'plain' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ChannelError);
    expect(error).toMatchObject({ retryable: false, code: 'CHANNEL_PERMANENT' });
    expect((error as Error).message).toBe('sendMessage failed for telegram:42 (403: Forbidden: bot was blocked by the user)');
  });

  it('keeps the token out of network errors', async () => {
    await startChannel(inbox().onMessage);
    await fake().close();
    const error = (await channel!.send({ chatId: '42' }, { text: 'hi', mode: 'plain' }).catch((err: unknown) => err)) as ChannelError;
    expect(error).toMatchObject({ retryable: true, code: 'CHANNEL_TRANSIENT' });
    expect(JSON.stringify({ message: error.message, cause: String(error.cause) })).not.toContain(fake().token.split(':')[1]);
  });

  it('renews the typing indicator until stopped', async () => {
    await startChannel(inbox().onMessage, { typingIntervalMs: 30 });
    const typing = createTypingIndicators();
    typing.start('telegram:-200:77', channel!, { chatId: '-200', threadId: '77' });
    const third = await fake().waitForCall('sendChatAction', 3);
    typing.stop('telegram:-200:77');
    expect(third.params).toMatchObject({ chat_id: '-200', action: 'typing', message_thread_id: 77 });
    expect(typing.active()).toEqual([]);
  });
});

describe('telegram channel: webhook mode', () => {
  it('sets the webhook with its secret and accepts only requests carrying it', async () => {
    const { onMessage, next } = inbox();
    await startChannel(onMessage, { webhookUrl: 'https://bot.example.com/telegram/webhook', webhookSecret: 'sekret-123' });
    expect(fake().callsOf('setWebhook')[0].params).toMatchObject({ url: 'https://bot.example.com/telegram/webhook', secret_token: 'sekret-123' });
    expect(fake().callsOf('getUpdates')).toEqual([]);
    const app = new Hono().post('/telegram/webhook', channel!.webhookHandler());
    const update = { update_id: 1, message: { message_id: 3, date: 0, chat: { id: 42, type: 'private' }, from: { id: 42, is_bot: false, first_name: 'Ada' }, text: 'via webhook' } };
    const post = (secret: string) => app.request('/telegram/webhook', { method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': secret }, body: JSON.stringify(update) });
    expect((await post('wrong')).status).toBe(401);
    expect((await post('sekret-123')).status).toBe(200);
    expect(await next()).toMatchObject({ id: 'telegram:42:3', text: 'via webhook' });
  });

  it('answers 500 when the update could not be handled, so Telegram retries', async () => {
    await startChannel(async () => {
      throw new Error('enqueue failed');
    }, { webhookUrl: 'https://bot.example.com/hook', webhookSecret: 's' });
    const app = new Hono().post('/hook', channel!.webhookHandler());
    const update = { update_id: 2, message: { message_id: 4, date: 0, chat: { id: 42, type: 'private' }, from: { id: 42, is_bot: false, first_name: 'Ada' }, text: 'x' } };
    const response = await app.request('/hook', { method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 's' }, body: JSON.stringify(update) });
    expect(response.status).toBe(500);
  });

  it('sets aside a webhook update that keeps failing, answering 200 so Telegram moves on', async () => {
    const setAside: SetAsideUpdate[] = [];
    channel = createTelegramChannel({ setAside: async (entry) => { setAside.push(entry); } }, { token: fake().token, apiRoot: fake().apiRoot, webhookUrl: 'https://bot.example.com/hook', webhookSecret: 's', maxUpdateAttempts: 2 });
    await channel.start(async () => {
      throw new Error('handler exploded');
    });
    const app = new Hono().post('/hook', channel.webhookHandler());
    const update = { update_id: 3, message: { message_id: 4, date: 0, chat: { id: 42, type: 'private' }, from: { id: 42, is_bot: false, first_name: 'Ada' }, text: 'x' } };
    const deliver = () => app.request('/hook', { method: 'POST', headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 's' }, body: JSON.stringify(update) });
    expect((await deliver()).status).toBe(500);
    expect((await deliver()).status).toBe(200);
    expect(setAside.map((entry) => [entry.updateId, entry.attempts])).toEqual([[3, 2]]);
  });
});

describe('telegram channel: options', () => {
  it('rejects a malformed token and a webhook without a secret', () => {
    expect(() => createTelegramChannel({}, { token: 'nope' })).toThrow(/`token` must look like/);
    expect(() => createTelegramChannel({}, { token: '1:abc', webhookUrl: 'https://x' })).toThrow(/`webhookSecret` is required/);
  });

  it('stops without waiting for the long poll to time out', async () => {
    await startChannel(inbox().onMessage, { pollTimeoutSeconds: 50 });
    await fake().waitForCall('getUpdates');
    const stopping = channel!.stop();
    channel = undefined;
    await Promise.race([stopping, once(fake(), 'never')]);
  });
});
