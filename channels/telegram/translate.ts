/**
 * Telegram message → InboundMessage. Pure: no network, no grammY runtime (types only).
 */
import type { Message, MessageEntity } from 'grammy/types';
import { toWellFormedInbound, type Attachment, type InboundMessage } from '../../src/core/inbound.js';

/** When the bot answers in groups: only when mentioned, replied to or commanded (`mention`), or always. */
export type GroupTrigger = 'mention' | 'always';

/** The bot's own identity, from getMe. */
export interface TelegramBotIdentity {
  id: number;
  username: string;
}

/** The outcome of translating one Telegram message. */
export type TelegramTranslation =
  | { kind: 'message'; message: InboundMessage }
  /** Media the bot cannot read, addressed to it: a message without text whose `unsupportedReply` the gateway sends. */
  | { kind: 'unsupported'; message: InboundMessage }
  | { kind: 'ignore'; reason: string };

/** The short reply to media the bot cannot read. */
export const UNSUPPORTED_MEDIA_REPLY = 'I can read text messages and the captions of photos. Please send your request as text.';

const UNSUPPORTED_KEYS = ['document', 'audio', 'video', 'voice', 'video_note', 'sticker', 'animation', 'location', 'contact', 'poll', 'dice', 'venue', 'story'] as const;

/**
 * Translates a Telegram message. Private chats always reach the bot; in groups, with trigger
 * `mention`, only messages that mention the bot, reply to it or are commands do. A photo with a
 * caption becomes its caption (the photo is listed as an attachment); other media get
 * `unsupported`, a message without text carrying {@link UNSUPPORTED_MEDIA_REPLY}. Bot mentions and `@botname` command suffixes are removed from the text.
 */
export function toInboundMessage(message: Message, bot: TelegramBotIdentity, options: { groupTrigger: GroupTrigger; receivedAt: number }): TelegramTranslation {
  if (!message.from || message.from.is_bot) return { kind: 'ignore', reason: 'not from a user' };
  const isPrivate = message.chat.type === 'private';
  if (!isPrivate && message.chat.type !== 'group' && message.chat.type !== 'supergroup') return { kind: 'ignore', reason: 'not a chat' };
  const rawText = message.text ?? (message.photo ? message.caption : undefined) ?? '';
  const entities = message.entities ?? message.caption_entities ?? [];
  const command = leadingCommand(rawText, entities);
  if (command && command.target !== undefined && command.target.toLowerCase() !== bot.username.toLowerCase()) {
    return { kind: 'ignore', reason: 'command for another bot' };
  }
  const addressed = isPrivate || options.groupTrigger === 'always' || command !== undefined || mentionsBot(rawText, entities, bot) || repliesToBot(message, bot);
  if (!addressed) return { kind: 'ignore', reason: 'group message not addressed to the bot' };
  const threadId = message.is_topic_message && message.message_thread_id !== undefined ? String(message.message_thread_id) : undefined;
  const chatId = String(message.chat.id);
  const unsupported = message.photo ? message.caption === undefined : UNSUPPORTED_KEYS.some((key) => key in message);
  const text = unsupported ? '' : cleanText(rawText, bot.username);
  if (!unsupported && text === '') return { kind: 'ignore', reason: 'no text' };
  const inbound: InboundMessage = {
    id: `telegram:${chatId}:${message.message_id}`,
    channel: 'telegram',
    chatId,
    userId: String(message.from.id),
    userName: [message.from.first_name, message.from.last_name].filter(Boolean).join(' ') || message.from.username || String(message.from.id),
    text,
    attachments: photoAttachments(message),
    platformMessageId: String(message.message_id),
    chatType: isPrivate ? 'private' : 'group',
    receivedAt: options.receivedAt,
  };
  if (threadId !== undefined) inbound.threadId = threadId;
  const replyTo = message.reply_to_message?.message_id;
  // In forum topics every message "replies" to the topic's creation message: not a real reply.
  if (replyTo !== undefined && String(replyTo) !== threadId) inbound.replyTo = String(replyTo);
  if (unsupported) return { kind: 'unsupported', message: toWellFormedInbound({ ...inbound, attachments: [], unsupportedReply: UNSUPPORTED_MEDIA_REPLY }) };
  return { kind: 'message', message: toWellFormedInbound(inbound) };
}

/** The bot command starting the text (`/usage@bot args`), with its `@target`, if any. */
function leadingCommand(text: string, entities: MessageEntity[]): { name: string; target?: string } | undefined {
  const entity = entities.find((e) => e.type === 'bot_command' && e.offset === 0);
  if (!entity) return undefined;
  const [name = '', target] = text.slice(1, entity.length).split('@');
  return { name, target };
}

function mentionsBot(text: string, entities: MessageEntity[], bot: TelegramBotIdentity): boolean {
  return entities.some((entity) => {
    if (entity.type === 'text_mention') return entity.user.id === bot.id;
    if (entity.type !== 'mention') return false;
    return text.slice(entity.offset, entity.offset + entity.length).toLowerCase() === `@${bot.username.toLowerCase()}`;
  });
}

function repliesToBot(message: Message, bot: TelegramBotIdentity): boolean {
  const replied = message.reply_to_message;
  if (!replied || replied.from?.id !== bot.id) return false;
  return !(message.is_topic_message && replied.message_id === message.message_thread_id);
}

/** Removes `@botname` mentions and command suffixes, collapsing the spaces left behind. */
function cleanText(text: string, username: string): string {
  const escaped = username.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text
    .replace(new RegExp(`^(/\\w+)@${escaped}\\b`, 'i'), '$1')
    .replace(new RegExp(`(^|\\s)@${escaped}\\b[,:]?`, 'gi'), '$1')
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
}

function photoAttachments(message: Message): Attachment[] {
  const largest = message.photo?.at(-1);
  return largest ? [{ kind: 'photo', ref: largest.file_id }] : [];
}
