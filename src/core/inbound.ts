import type { BusyMode } from './busy-mode.js';
import { isWellFormedText, toWellFormedText } from './text.js';

/** The channels chatgate speaks (`api`: the OpenAI-compatible HTTP API, channels/openai-api). */
/** Every channel chatgate has, in one list. */
export const CHANNEL_NAMES = ['telegram', 'discord', 'web', 'api'] as const;
export type ChannelName = (typeof CHANNEL_NAMES)[number];

/**
 * The Telegram Bot API root (grammY's `apiRoot`) when none is given: the Telegram channel's
 * default, and `TELEGRAM_API_ROOT`'s. Here, so the configuration reads it without loading a channel.
 */
export const DEFAULT_TELEGRAM_API_ROOT = 'https://api.telegram.org';

/** The Discord REST API root without the version (discord.js `rest.api`) when none is given: as {@link DEFAULT_TELEGRAM_API_ROOT}. */
export const DEFAULT_DISCORD_API_ROOT = 'https://discord.com/api';

/** Who may talk to the bot on one channel: everyone (`*`) or the listed user ids (empty: nobody). */
export type AllowList = '*' | readonly string[];

/**
 * A file or media item attached to an inbound message. The adapter reports it (`ref`, and `size`
 * when the platform says it); the gateway downloads a readable one within the size limit and
 * stores its bytes in Redis, recording where in `stored`. The inbox never holds the bytes.
 */
export interface Attachment {
  kind: 'photo' | 'document' | 'audio' | 'video' | 'voice' | 'sticker' | 'other';
  /** Platform file id or URL. */
  ref: string;
  mimeType?: string;
  fileName?: string;
  /** Size in bytes as the platform reports it, when it does. */
  size?: number;
  /** Set by the gateway once the bytes are stored (src/redis/attachments.ts). */
  stored?: StoredAttachment;
}

/** Where the gateway stored an attachment's bytes, and how many there are. */
export interface StoredAttachment {
  /** Id under the session's key space (`attachmentKey(sessionId, id)`). */
  id: string;
  /** Bytes stored. */
  bytes: number;
  /** ms since epoch after which the bytes are gone (the key's TTL). */
  expiresAtMs: number;
}

/**
 * One incoming message, normalised by a channel adapter. Adapters know nothing about sessions or
 * LLMs; the gateway derives the session from `channel`, `chatId`, `threadId` and `userId`.
 */
export interface InboundMessage {
  /** Unique per platform message (used to drop re-deliveries), e.g. `telegram:123:456`. */
  id: string;
  channel: ChannelName;
  chatId: string;
  /** Forum topic or thread id, when the platform has one. */
  threadId?: string;
  userId: string;
  userName: string;
  text: string;
  attachments: Attachment[];
  /** Platform id of the message this one replies to. */
  replyTo?: string;
  /**
   * The platform's own id of this message, as a string (Telegram `message_id`, Discord message
   * snowflake, web `clientMessageId`): what a reply threads to (`OutboundMessage.replyTo`).
   */
  platformMessageId?: string;
  /** Whether the chat is private (a DM) or a group/guild channel. */
  chatType?: 'private' | 'group';
  /** ms since epoch, when the adapter received it. */
  receivedAt: number;
  /**
   * Only media the bot cannot read: the gateway answers with this text (a notice, through the
   * outbound queue like every reply) and starts no turn. Adapters never send from an update handler.
   */
  unsupportedReply?: string;
  /**
   * The adapter shows refusals (denied, rate limit, size) to the sender itself, from the
   * handler's {@link InboundVerdict} (the web chat answers 403/429/413): the gateway sends no notice.
   */
  refusalsAnswered?: boolean;
  /** The sender's network address (web chat; an IPv6 address's /64): the rate limit holds per address too. Never stored. */
  clientAddress?: string;
  /**
   * Not something a person wrote: an event for the session's turn (a decision on a tool call the
   * turn asked about). It enters the inbox like a message, so it wakes the turn in order with the
   * session's other work; the model never sees it (its `text` is empty).
   */
  event?: InboundEvent;
  /**
   * The adapter shows a command's answer itself, from the handler's verdict (a button press:
   * Telegram's callback answer, a Discord interaction reply; every command of the API channel):
   * the gateway sends no notice for it. `/compact` and `/btw` answer later, as notices all the same.
   */
  answerInPlace?: boolean;
  /**
   * Set by the gateway's accept: what the message does if it finds its session's turn running — the
   * channel's or deployment's busy mode (src/core/busy-mode.ts); the chat's `/mode` wins over it.
   * Absent: `queue`.
   */
  busyMode?: BusyMode;
}

/** An event that enters a session's inbox (see {@link InboundMessage.event}). */
export interface InboundEvent {
  type: 'approval';
  approvalId: string;
  /** The decision that was made (`approved`, `denied`, `expired`). */
  state: string;
  /** The id of the message that made the decision (a typed `/approve`, a press), when one did: the resumed turn answers it too. */
  messageId?: string;
}

/**
 * The ids of the messages a turn of `items` answers: each item's own, and for a decision event the
 * message that made the decision (an API request waits for the resumed turn's answer by that id).
 */
export function answeredIds(items: readonly Pick<InboundMessage, 'id' | 'event'>[]): string[] {
  return items.flatMap((item) => (item.event?.messageId ? [item.id, item.event.messageId] : [item.id]));
}

/**
 * Longest sender name an adapter hands on, code points (cut on a boundary): in groups the name
 * prefixes the stored text, so a 10,000-character name must not slip past the size limit.
 */
export const MAX_USER_NAME_CHARS = 64;

/** How the gateway handled one inbound message. */
export type InboundOutcome = 'accepted' | 'duplicate' | 'denied' | 'rate_limited' | 'too_long' | 'command' | 'unsupported' | 'too_large' | 'over_budget';

/** The gateway's answer to one inbound message: what an adapter needs to show a refusal itself. */
export interface InboundVerdict {
  outcome: InboundOutcome;
  /** For a refusal: what the sender is told, in their words. */
  reason?: string;
  /** For `rate_limited`: when the sender may send again, in ms. */
  retryAfterMs?: number;
  /**
   * For a command sent with `answerInPlace`: its answer (Markdown), whether it settled what the buttons
   * asked, `repeat` when it decided nothing new (decided before: a second press, a second tab), and
   * `open`: the questions its turn still waits for (their text), when the turn asked several.
   */
  answer?: { text: string; settled: boolean; repeat?: boolean; open?: string[] };
}

/** A reply to be delivered to a chat by the gateway (the outbound queue's job payload). */
export interface OutboundMessage {
  /** Stable id per reply: a retried turn produces the same id, so it is delivered once. */
  id: string;
  sessionId: string;
  channel: ChannelName;
  chatId: string;
  threadId?: string;
  /** Markdown text; the channel formats and splits it for the platform. */
  text: string;
  /** Platform message id to reply to, when known. */
  replyTo?: string;
  /** `reply` is the agent's answer; `notice` a system message (errors, pauses). */
  kind: 'reply' | 'notice';
  /**
   * Buttons under the message, each sending its command when pressed (Telegram inline keyboard,
   * Discord buttons, web chat buttons). The same commands can always be typed.
   */
  choices?: MessageChoice[];
  /**
   * Set on each approval question: how many questions its tool round asks, each its own message
   * with its buttons. A channel that answers with one message (the OpenAI-compatible API) answers
   * once it holds them all.
   */
  questions?: number;
  /**
   * Streaming: the stream of partial replies this message ends when it answers the turn in place of
   * its reply (a notice). A reply's own `id` is its stream id.
   */
  liveReplyId?: string;
  /**
   * The ids of the inbound messages this message answers or follows: {@link answeredIds} of its turn
   * on everything a turn sends (its reply, notices, approval questions, a dead letter's notice), the
   * message's own id on the gateway's answers to it. A channel that hands it to one request (the
   * OpenAI-compatible API) hands it to theirs only. Absent: not known.
   */
  answers?: string[];
  /**
   * Set on the notice that answers a turn in place of its reply because a spend limit holds: a
   * channel with statuses (the OpenAI-compatible API) answers it as it answers the gateway's own
   * over-budget refusal (429).
   */
  refusal?: 'over_budget';
}

/** One button under a message: its label and the chat command a press sends (e.g. `/approve k3x9ab`). */
export interface MessageChoice {
  label: string;
  command: string;
}

/** How group chats map to sessions. Default `per-chat`. */
export type GroupSessionMode = 'per-chat' | 'per-user';

/**
 * The session key of a message: `channel:chatId[:threadId]`, plus `:userId` in groups when the
 * mode is `per-user`. Stable for life; compaction never changes it.
 */
export function sessionKeyOf(message: Pick<InboundMessage, 'channel' | 'chatId' | 'threadId' | 'userId' | 'chatType'>, groupMode: GroupSessionMode = 'per-chat'): string {
  let key = `${message.channel}:${message.chatId}`;
  if (message.threadId) key += `:${message.threadId}`;
  if (groupMode === 'per-user' && message.chatType === 'group') key += `:u${message.userId}`;
  return key;
}

/**
 * The message with every string in it well-formed (lone surrogates → U+FFFD); Redis's Lua JSON
 * decoder rejects the escape JSON.stringify writes for half an emoji. Applied once on the way in:
 * by the adapter that builds the message, or by the inbox's accept (src/redis/ingest.ts) for a
 * library caller's message that holds a lone surrogate. A well-formed message is returned as it is;
 * otherwise a repaired JSON copy.
 */
export function toWellFormedInbound<T extends InboundMessage>(message: T): T {
  if (isWellFormedValue(message)) return message;
  return JSON.parse(JSON.stringify(message, (_key, value: unknown) => (typeof value === 'string' ? toWellFormedText(value) : value))) as T;
}

/** Whether every string value in a JSON-like value is well-formed (keys are not repaired either way). */
function isWellFormedValue(value: unknown): boolean {
  if (typeof value === 'string') return isWellFormedText(value);
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) return value.every(isWellFormedValue);
  for (const key in value) {
    if (!isWellFormedValue((value as Record<string, unknown>)[key])) return false;
  }
  return true;
}
