/**
 * One bad update never stops a Telegram bot for everyone: a user who blocked the bot (403), a
 * deleted forum topic (400) and a malformed update each leave every other chat answered.
 */
import { describe, expect, it } from 'vitest';
import { SET_ASIDE_REPLY } from '../../channels/telegram/set-aside.js';
import { UNSUPPORTED_MEDIA_REPLY } from '../../channels/telegram/translate.js';
import { readChannelDeadLetters, setAsideChannelUpdate } from '../../src/redis/channel-dead-letters.js';
import type { Stack } from '../helpers/stack.js';
import { useTelegramFixture } from '../helpers/telegram-stack.js';

const tg = useTelegramFixture();

async function start(): Promise<Stack> {
  return tg.start({
    handler: () => ({ content: 'ok' }), channel: { redeliveryDelayMs: 20 },
    deps: { setAside: (entry) => setAsideChannelUpdate(tg.stack!.t.redis, entry, tg.stack!.t.keyPrefix) },
  });
}

const waitUntil = tg.until;

const sendsTo = (chatId: string) => tg.telegram.callsOf('sendMessage').filter((call) => call.params.chat_id === chatId);
const user = (id: number) => ({ from: { id, is_bot: false, first_name: `U${id}` }, chat: { id, type: 'private', first_name: `U${id}` } });
const STICKER = { sticker: { file_id: 'st', file_unique_id: 'st', type: 'regular', width: 1, height: 1, is_animated: false, is_video: false } };

describe('a Telegram bot with one bad update', () => {
  it('keeps answering another chat while replies to a user who blocked the bot get 403', async () => {
    await start();
    tg.telegram.blockUser(42);
    tg.telegram.pushMessage({ ...user(42), ...STICKER });
    tg.telegram.pushMessage({ ...user(42), text: 'hello from a blocked user' });
    tg.telegram.pushMessage({ ...user(43), text: 'hello from a happy user' });
    await waitUntil(() => sendsTo('43').length > 0);
    expect(sendsTo('43')[0]!.params.text).toBe('ok');
    // The blocked chat was tried (through the outbound queue, not from the update handler) and refused.
    await waitUntil(() => sendsTo('42').some((call) => call.params.text === UNSUPPORTED_MEDIA_REPLY));
    tg.telegram.pushMessage({ ...user(43), text: 'and again' });
    await waitUntil(() => sendsTo('43').length > 1);
  });

  it('keeps answering while a send into a deleted forum topic gets 400', async () => {
    await start();
    const forum = { id: -100, type: 'supergroup', title: 'F', is_forum: true };
    tg.telegram.deleteTopic(-100, 77);
    const fromBot = { message_id: 5, date: 0, chat: forum, from: { id: tg.telegram.botId, is_bot: true, first_name: 'B' }, text: 'earlier' };
    tg.telegram.pushMessage({ chat: forum, is_topic_message: true, message_thread_id: 77, reply_to_message: fromBot, ...STICKER });
    tg.telegram.pushMessage({ ...user(43), text: 'anyone there?' });
    await waitUntil(() => sendsTo('43').length > 0);
    await waitUntil(() => sendsTo('-100').length > 0);
    expect(sendsTo('-100')[0]!.params).toMatchObject({ message_thread_id: 77, text: UNSUPPORTED_MEDIA_REPLY });
  });

  it('sets a malformed update aside in Redis and polls on', async () => {
    const s = await start();
    const bad = tg.telegram.pushUpdate({ message: { message_id: 1, date: 0, from: { id: 42, is_bot: false, first_name: 'A' }, text: 'where is my chat?' } });
    tg.telegram.pushMessage({ ...user(43), text: 'next please' });
    await waitUntil(() => sendsTo('43').length > 0);
    const setAside = await readChannelDeadLetters(s.t.redis, 'telegram', s.t.keyPrefix);
    expect(setAside).toEqual([expect.objectContaining({ channel: 'telegram', updateId: bad, attempts: 3 })]);
    expect(JSON.parse(setAside[0]!.raw)).toMatchObject({ update_id: bad, message: { text: 'where is my chat?' } });
  });

  it('tells the sender of a message that could not be handled, once it is set aside', async () => {
    await start();
    // Entities that are not a list make the translation throw, every time.
    tg.telegram.pushUpdate({ message: { message_id: 7, date: 0, ...user(44), text: '/odd', entities: 5 } });
    tg.telegram.pushMessage({ ...user(43), text: 'me next' });
    await waitUntil(() => sendsTo('43').length > 0 && sendsTo('44').length > 0);
    expect(sendsTo('44')[0]!.params).toMatchObject({ text: SET_ASIDE_REPLY, reply_parameters: { message_id: 7 } });
  });
});
