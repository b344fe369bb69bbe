/**
 * Telegram message → InboundMessage. Pure: no network, no grammY runtime (types only).
 */
import type { Message, MessageEntity } from 'grammy/types';
import { MAX_USER_NAME_CHARS, toWellFormedInbound, type Attachment, type InboundMessage } from '../../src/core/inbound.js';
import { truncateText } from '../../src/core/text.js';

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
export const UNSUPPORTED_MEDIA_REPLY = 'I can read text messages, photos and images, documents (PDF and text files) and voice messages, but not this kind of message. Please send your request as text.';

const UNSUPPORTED_KEYS = ['video', 'video_note', 'sticker', 'animation', 'location', 'contact', 'poll', 'dice', 'venue', 'story'] as const;

/** Default largest photo size chosen among a photo's sizes, bytes (the gateway's default limit). */
const DEFAULT_MAX_PHOTO_BYTES = 10 * 1024 * 1024;

/**
 * Translates a Telegram message. Private chats always reach the bot; in groups, with trigger
 * `mention`, only messages that mention the bot, reply to it or are commands do. Photos (the
 * largest size within `maxPhotoBytes`), documents, voice messages and audio files become
 * attachments with their caption as the text (the gateway decides whether it can read them);
 * other media (video, stickers, locations...) get `unsupported`, a message without text carrying
 * {@link UNSUPPORTED_MEDIA_REPLY}. Bot mentions and `@botname` command suffixes are removed from the text.
 */
export function toInboundMessage(message: Message, bot: TelegramBotIdentity, options: { groupTrigger: GroupTrigger; receivedAt: number; maxPhotoBytes?: number; updateId?: number }): TelegramTranslation {
  if (!message.from || message.from.is_bot) return { kind: 'ignore', reason: 'not from a user' };
  const isPrivate = message.chat.type === 'private';
  if (!isPrivate && message.chat.type !== 'group' && message.chat.type !== 'supergroup') return { kind: 'ignore', reason: 'not a chat' };
  const rawText = message.text ?? message.caption ?? '';
  const entities = message.entities ?? message.caption_entities ?? [];
  const command = leadingCommand(rawText, entities);
  if (command && command.target !== undefined && command.target.toLowerCase() !== bot.username.toLowerCase()) {
    return { kind: 'ignore', reason: 'command for another bot' };
  }
  const addressed = isPrivate || options.groupTrigger === 'always' || command !== undefined || mentionsBot(rawText, entities, bot) || repliesToBot(message, bot);
  if (!addressed) return { kind: 'ignore', reason: 'group message not addressed to the bot' };
  const threadId = message.is_topic_message && message.message_thread_id !== undefined ? String(message.message_thread_id) : undefined;
  const chatId = String(message.chat.id);
  const unsupported = UNSUPPORTED_KEYS.some((key) => key in message);
  const text = unsupported ? '' : cleanText(rawText, bot.username);
  const attachments = unsupported ? [] : attachmentsOf(message, options.maxPhotoBytes ?? DEFAULT_MAX_PHOTO_BYTES);
  if (!unsupported && text === '' && attachments.length === 0) return { kind: 'ignore', reason: 'no text' };
  const inbound: InboundMessage = {
    id: `telegram:${chatId}:${messageKeyOf(message, options.updateId)}`,
    channel: 'telegram',
    chatId,
    userId: String(message.from.id),
    userName: truncateText([message.from.first_name, message.from.last_name].filter(Boolean).join(' ') || message.from.username || String(message.from.id), MAX_USER_NAME_CHARS),
    text,
    attachments,
    chatType: isPrivate ? 'private' : 'group',
    receivedAt: options.receivedAt,
  };
  if (typeof message.message_id === 'number') inbound.platformMessageId = String(message.message_id);
  if (threadId !== undefined) inbound.threadId = threadId;
  const replyTo = message.reply_to_message?.message_id;
  // In forum topics every message "replies" to the topic's creation message: not a real reply.
  if (replyTo !== undefined && String(replyTo) !== threadId) inbound.replyTo = String(replyTo);
  if (unsupported) return { kind: 'unsupported', message: toWellFormedInbound({ ...inbound, attachments: [], unsupportedReply: UNSUPPORTED_MEDIA_REPLY }) };
  return { kind: 'message', message: toWellFormedInbound(inbound) };
}

/**
 * What makes the message's id unique in its chat: its `message_id`; without one (a malformed
 * update), its update's `update_id` (`u<id>`); without either, its date and sender (`d<date>:<user>`).
 */
function messageKeyOf(message: Message, updateId: number | undefined): string {
  if (typeof message.message_id === 'number') return String(message.message_id);
  if (typeof updateId === 'number') return `u${updateId}`;
  return `d${message.date}:${message.from?.id}`;
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

/** The files of a message: a photo, a document (an image document counts as a photo), a voice message, an audio file. */
function attachmentsOf(message: Message, maxPhotoBytes: number): Attachment[] {
  if (message.photo && message.photo.length > 0) {
    // Sizes come smallest first; take the largest within the limit (else the smallest, which the gateway refuses).
    const fitting = message.photo.filter((size) => size.file_size === undefined || size.file_size <= maxPhotoBytes);
    const size = fitting.at(-1) ?? message.photo[0]!;
    return [withSize({ kind: 'photo', ref: size.file_id, mimeType: 'image/jpeg', fileName: `photo-${message.message_id}.jpg` }, size.file_size)];
  }
  const document = message.document;
  if (document) {
    const kind = document.mime_type?.startsWith('image/') ? 'photo' : 'document';
    return [withSize({ kind, ref: document.file_id, ...optional(document.mime_type, document.file_name) }, document.file_size)];
  }
  if (message.voice) {
    return [withSize({ kind: 'voice', ref: message.voice.file_id, mimeType: message.voice.mime_type ?? 'audio/ogg', fileName: `voice-${message.message_id}.ogg` }, message.voice.file_size)];
  }
  const audio = message.audio;
  if (audio) return [withSize({ kind: 'audio', ref: audio.file_id, ...optional(audio.mime_type, audio.file_name) }, audio.file_size)];
  return [];
}

function optional(mimeType: string | undefined, fileName: string | undefined): Pick<Attachment, 'mimeType' | 'fileName'> {
  return { ...(mimeType ? { mimeType } : {}), ...(fileName ? { fileName } : {}) };
}

function withSize(attachment: Attachment, size: number | undefined): Attachment {
  return size === undefined ? attachment : { ...attachment, size };
}
