/**
 * Discord message → InboundMessage. Pure: works on a plain {@link DiscordMessageLike} that the
 * adapter extracts from a discord.js Message, so it is table-testable without discord.js.
 */
import { MAX_USER_NAME_CHARS, toWellFormedInbound, type Attachment, type InboundMessage } from '../../src/core/inbound.js';
import { truncateText } from '../../src/core/text.js';

/** When the bot answers in guild channels: only when mentioned or replied to (`mention`), or always. */
export type GuildTrigger = 'mention' | 'always';

/** The parts of a Discord message the translation needs. */
export interface DiscordMessageLike {
  id: string;
  channelId: string;
  /** Null in DMs. */
  guildId: string | null;
  /** Set when the message was posted in a thread: the thread's parent channel. */
  threadParentId?: string;
  author: { id: string; bot: boolean; username: string; displayName?: string };
  content: string;
  mentionedUserIds: string[];
  /** Author of the message this one replies to, when known. */
  repliedToUserId?: string;
  /** Id of the message this one replies to. */
  referenceMessageId?: string;
  attachments: Array<{ url: string; contentType?: string; name?: string; size?: number }>;
}

/** The outcome of translating one Discord message. */
export type DiscordTranslation =
  | { kind: 'message'; message: InboundMessage }
  | { kind: 'ignore'; reason: string };


/**
 * Translates a Discord message. DMs always reach the bot; in guild channels, with trigger
 * `mention`, only messages mentioning the bot, replying to it, or starting with one of
 * `commandNames` (`/usage`) do. A thread is its own session: `chatId` is the parent channel,
 * `threadId` the thread. The bot's mention is removed from the text. Attachments are listed with
 * their type, name and size (the gateway decides whether it can read them), with or without text.
 */
export function toInboundMessage(message: DiscordMessageLike, botId: string, options: { guildTrigger: GuildTrigger; commandNames: readonly string[]; receivedAt: number }): DiscordTranslation {
  if (message.author.bot || message.author.id === botId) return { kind: 'ignore', reason: 'not from a user' };
  const isDm = message.guildId === null;
  const text = message.content.replace(new RegExp(`<@!?${botId}>`, 'g'), ' ').replace(/[ \t]{2,}/g, ' ').trim();
  const command = /^\/(\w+)/.exec(text)?.[1]?.toLowerCase();
  const addressed =
    isDm ||
    options.guildTrigger === 'always' ||
    message.mentionedUserIds.includes(botId) ||
    message.repliedToUserId === botId ||
    (command !== undefined && options.commandNames.includes(command));
  if (!addressed) return { kind: 'ignore', reason: 'guild message not addressed to the bot' };
  if (text === '' && message.attachments.length === 0) return { kind: 'ignore', reason: 'no text' };
  const inThread = message.threadParentId !== undefined;
  const inbound: InboundMessage = {
    id: `discord:${message.channelId}:${message.id}`,
    channel: 'discord',
    chatId: inThread ? message.threadParentId! : message.channelId,
    userId: message.author.id,
    userName: truncateText(message.author.displayName || message.author.username, MAX_USER_NAME_CHARS),
    text,
    attachments: message.attachments.map(toAttachment),
    platformMessageId: message.id,
    chatType: isDm ? 'private' : 'group',
    receivedAt: options.receivedAt,
  };
  if (inThread) inbound.threadId = message.channelId;
  if (message.referenceMessageId !== undefined) inbound.replyTo = message.referenceMessageId;
  return { kind: 'message', message: toWellFormedInbound(inbound) };
}

function toAttachment(attachment: DiscordMessageLike['attachments'][number]): Attachment {
  const mime = attachment.contentType ?? '';
  const kind: Attachment['kind'] = mime.startsWith('image/') ? 'photo' : mime.startsWith('video/') ? 'video' : mime.startsWith('audio/') ? 'audio' : 'document';
  const result: Attachment = { kind, ref: attachment.url };
  if (attachment.contentType) result.mimeType = attachment.contentType;
  if (attachment.name) result.fileName = attachment.name;
  if (attachment.size !== undefined) result.size = attachment.size;
  return result;
}
