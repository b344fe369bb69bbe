import type { Message } from 'grammy/types';
import { describe, expect, it } from 'vitest';
import { toInboundMessage as fromDiscord, type DiscordMessageLike } from '../../channels/discord/translate.js';
import { toInboundMessage as fromTelegram } from '../../channels/telegram/translate.js';
import { createWebChannel } from '../../channels/web/index.js';
import type { InboundMessage } from '../../src/core/inbound.js';

const BOT = { id: 999, username: 'chatgate_bot' };
const user = { id: 7, is_bot: false, first_name: 'Ada', last_name: 'L', username: 'ada' };
const group = { id: -100, type: 'supergroup' as const, title: 'G' };

function telegram(message: Partial<Message>, groupTrigger: 'mention' | 'always' = 'mention') {
  const full = { message_id: 5, date: 0, from: user, chat: { id: 7, type: 'private', first_name: 'Ada' }, ...message } as Message;
  return fromTelegram(full, BOT, { groupTrigger, receivedAt: 1 });
}

describe('telegram toInboundMessage', () => {
  it('translates a private text message', () => {
    expect(telegram({ text: 'hi' })).toEqual({
      kind: 'message',
      message: { id: 'telegram:7:5', channel: 'telegram', chatId: '7', userId: '7', userName: 'Ada L', text: 'hi', attachments: [], platformMessageId: '5', chatType: 'private', receivedAt: 1 },
    });
  });

  it('carries the platform message id of a group message', () => {
    const mention = telegram({ message_id: 42, chat: group, text: '@chatgate_bot hi', entities: [{ type: 'mention', offset: 0, length: 13 }] });
    expect(mention.kind === 'message' && [mention.message.platformMessageId, mention.message.chatType]).toEqual(['42', 'group']);
  });

  it.each([
    ['plain group chatter', { chat: group, text: 'hello all' }, 'ignore'],
    ['a mention', { chat: group, text: '@chatgate_bot hi', entities: [{ type: 'mention', offset: 0, length: 13 }] }, 'message'],
    ['a mention of someone else', { chat: group, text: '@other hi', entities: [{ type: 'mention', offset: 0, length: 6 }] }, 'ignore'],
    ['a text_mention of the bot', { chat: group, text: 'Bot hi', entities: [{ type: 'text_mention', offset: 0, length: 3, user: { id: 999, is_bot: true, first_name: 'B' } }] }, 'message'],
    ['a command', { chat: group, text: '/status', entities: [{ type: 'bot_command', offset: 0, length: 7 }] }, 'message'],
    ['a command for another bot', { chat: group, text: '/status@other_bot', entities: [{ type: 'bot_command', offset: 0, length: 17 }] }, 'ignore'],
    ['a message from a bot', { from: { id: 3, is_bot: true, first_name: 'X' }, text: 'beep' }, 'ignore'],
    ['a channel post', { chat: { id: -5, type: 'channel', title: 'C' }, text: 'news' }, 'ignore'],
    ['a service message', { new_chat_members: [user] }, 'ignore'],
    ['a voice message', { voice: { file_id: 'v', file_unique_id: 'v', duration: 1 } }, 'message'],
    ['a photo without caption', { photo: [{ file_id: 'p', file_unique_id: 'p', width: 1, height: 1 }] }, 'message'],
    ['a sticker', { sticker: { file_id: 's', file_unique_id: 's', type: 'regular', width: 1, height: 1, is_animated: false, is_video: false } }, 'unsupported'],
    ['a location', { location: { latitude: 1, longitude: 2 } }, 'unsupported'],
    ['a document in a group, not addressed', { chat: group, document: { file_id: 'd', file_unique_id: 'd' } }, 'ignore'],
  ] as Array<[string, Partial<Message>, string]>)('group and media rules: %s → %s', (_name, message, kind) => {
    expect(telegram(message).kind).toBe(kind);
  });

  it.each([
    ['the largest photo size within the limit', { photo: [{ file_id: 'a', file_unique_id: 'a', width: 1, height: 1, file_size: 10 }, { file_id: 'b', file_unique_id: 'b', width: 2, height: 2, file_size: 500 }, { file_id: 'c', file_unique_id: 'c', width: 3, height: 3, file_size: 5000 }] }, { kind: 'photo', ref: 'b', mimeType: 'image/jpeg', size: 500 }],
    ['the smallest photo size when none fits (the gateway refuses it)', { photo: [{ file_id: 'a', file_unique_id: 'a', width: 1, height: 1, file_size: 2000 }, { file_id: 'b', file_unique_id: 'b', width: 2, height: 2, file_size: 5000 }] }, { kind: 'photo', ref: 'a', size: 2000 }],
    ['an image document as a photo', { document: { file_id: 'd', file_unique_id: 'd', mime_type: 'image/png', file_name: 'scan.png', file_size: 700 } }, { kind: 'photo', ref: 'd', mimeType: 'image/png', fileName: 'scan.png', size: 700 }],
    ['a document', { caption: 'read it', document: { file_id: 'd', file_unique_id: 'd', mime_type: 'application/pdf', file_name: 'r.pdf', file_size: 70 } }, { kind: 'document', ref: 'd', mimeType: 'application/pdf', fileName: 'r.pdf', size: 70 }],
    ['a voice message', { voice: { file_id: 'v', file_unique_id: 'v', duration: 1, file_size: 90 } }, { kind: 'voice', ref: 'v', mimeType: 'audio/ogg', size: 90 }],
    ['an audio file', { audio: { file_id: 'au', file_unique_id: 'au', duration: 1, mime_type: 'audio/mpeg', file_name: 'talk.mp3' } }, { kind: 'audio', ref: 'au', mimeType: 'audio/mpeg', fileName: 'talk.mp3' }],
  ] as Array<[string, Partial<Message>, Record<string, unknown>]>)('reports %s as an attachment', (_name, message, expected) => {
    const full = { message_id: 5, date: 0, from: user, chat: { id: 7, type: 'private', first_name: 'Ada' }, ...message } as Message;
    const result = fromTelegram(full, BOT, { groupTrigger: 'mention', receivedAt: 1, maxPhotoBytes: 1000 });
    expect(result.kind === 'message' && result.message.attachments).toEqual([expect.objectContaining(expected)]);
  });

  it('answers every group message with groupTrigger always', () => {
    expect(telegram({ chat: group, text: 'hello all' }, 'always').kind).toBe('message');
  });

  it('strips the bot mention and the command suffix', () => {
    const mention = telegram({ chat: group, text: 'hey @ChatGate_Bot, what now?', entities: [{ type: 'mention', offset: 4, length: 13 }] });
    expect(mention.kind === 'message' && mention.message.text).toBe('hey what now?');
    const command = telegram({ chat: group, text: '/compact@chatgate_bot the budget', entities: [{ type: 'bot_command', offset: 0, length: 21 }] });
    expect(command.kind === 'message' && command.message.text).toBe('/compact the budget');
  });

  it('does not treat the forum topic root as a reply', () => {
    const root = { message_id: 77, date: 0, chat: group } as Message;
    const topic = telegram({ chat: group, text: '/help', entities: [{ type: 'bot_command', offset: 0, length: 5 }], is_topic_message: true, message_thread_id: 77, reply_to_message: root as never });
    expect(topic.kind === 'message' && [topic.message.threadId, topic.message.replyTo]).toEqual(['77', undefined]);
  });
});

function discord(overrides: Partial<DiscordMessageLike>, guildTrigger: 'mention' | 'always' = 'mention') {
  const message: DiscordMessageLike = {
    id: '10', channelId: '20', guildId: '30', author: { id: '7', bot: false, username: 'ada', displayName: 'Ada' }, content: 'hi', mentionedUserIds: [], attachments: [], ...overrides,
  };
  return fromDiscord(message, '999', { guildTrigger, commandNames: ['usage', 'help'], receivedAt: 1 });
}

describe('discord toInboundMessage', () => {
  it('translates a DM', () => {
    expect(discord({ guildId: null })).toEqual({
      kind: 'message',
      message: { id: 'discord:20:10', channel: 'discord', chatId: '20', userId: '7', userName: 'Ada', text: 'hi', attachments: [], platformMessageId: '10', chatType: 'private', receivedAt: 1 },
    });
  });

  it.each([
    ['guild chatter', {}, 'ignore'],
    ['a mention', { content: '<@999> hi', mentionedUserIds: ['999'] }, 'message'],
    ['a nickname mention', { content: '<@!999> hi', mentionedUserIds: ['999'] }, 'message'],
    ['a reply to the bot', { repliedToUserId: '999', referenceMessageId: '9' }, 'message'],
    ['a known command', { content: '/usage' }, 'message'],
    ['an unknown command', { content: '/ban everyone' }, 'ignore'],
    ['a bot', { guildId: null, author: { id: '8', bot: true, username: 'b' } }, 'ignore'],
    ['an attachment without text', { guildId: null, content: '', attachments: [{ url: 'u', contentType: 'image/png' }] }, 'message'],
    ['nothing at all', { guildId: null, content: '', attachments: [] }, 'ignore'],
  ] as Array<[string, Partial<DiscordMessageLike>, string]>)('%s → %s', (_name, overrides, kind) => {
    expect(discord(overrides).kind).toBe(kind);
  });

  it('maps a thread to chatId = parent, threadId = thread, and strips the mention', () => {
    const result = discord({ channelId: '21', threadParentId: '20', content: '<@999>  summarise this', mentionedUserIds: ['999'] });
    expect(result.kind === 'message' && [result.message.chatId, result.message.threadId, result.message.text]).toEqual(['20', '21', 'summarise this']);
  });

  it('keeps image attachments with their text', () => {
    const result = discord({ guildId: null, content: 'what is this?', attachments: [{ url: 'https://cdn/x.png', contentType: 'image/png', name: 'x.png' }] });
    expect(result.kind === 'message' && result.message.attachments).toEqual([{ kind: 'photo', ref: 'https://cdn/x.png', mimeType: 'image/png', fileName: 'x.png' }]);
  });
});

describe('web inbound message', () => {
  it('carries the clientMessageId as the platform message id', async () => {
    const channel = createWebChannel();
    const received: InboundMessage[] = [];
    await channel.start(async (message) => { received.push(message); });
    const response = await channel.app.request('/api/chat/conv-1/messages', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'hi', clientMessageId: 'm7' }),
    });
    await channel.stop();
    expect(response.status).toBe(202);
    expect(received.map((m) => [m.id, m.platformMessageId, m.chatType])).toEqual([['web:conv-1:m7', 'm7', 'private']]);
  });
});
