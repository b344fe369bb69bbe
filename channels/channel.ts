import type { Attachment, ChannelName, InboundMessage, InboundVerdict, MessageChoice } from '../src/core/inbound.js';
import { classifyFailure, isRetryableKind, type FailureKind, type RemoteFailure } from '../src/core/retry.js';
import { ChannelError } from '../src/errors.js';

/** Stable `ChannelError` codes thrown by every adapter's `send`/`sendTyping`. */
export const CHANNEL_ERROR_CODES = {
  /** The platform asked us to slow down; `retryAfterMs` says for how long. Retryable. */
  rateLimited: 'CHANNEL_RATE_LIMITED',
  /** Network failure, timeout or 5xx. Retryable with backoff. */
  transient: 'CHANNEL_TRANSIENT',
  /** The platform rejected the formatting (e.g. Telegram "can't parse entities"). Resend as plain text. */
  formatRejected: 'CHANNEL_FORMAT_REJECTED',
  /** Chat not found, bot blocked or kicked, missing permission. Never retried. */
  permanent: 'CHANNEL_PERMANENT',
  /** The adapter is not started (or already stopped). */
  notStarted: 'CHANNEL_NOT_STARTED',
  /** A file is over the byte limit of the download (or the platform's own). Never retried. */
  fileTooLarge: 'CHANNEL_FILE_TOO_LARGE',
} as const;

/** Options of {@link Channel.downloadAttachment}. */
export interface DownloadOptions {
  /** Largest file accepted: a longer download is aborted with `CHANNEL_FILE_TOO_LARGE`. */
  maxBytes: number;
  /** Aborts the download. */
  signal?: AbortSignal;
}

/** How a channel measures `maxMessageLength`: UTF-16 code units (Telegram) or Unicode code points (Discord). */
export type LengthUnit = 'utf16' | 'codepoints';

/** The markup a channel expects for formatted text. `markdown` means the platform renders Markdown itself. */
export type TextFormatting = 'telegram-html' | 'markdown' | 'plain';

/** Where a message goes: a chat, optionally a thread/topic inside it, optionally replying to a message. */
export interface ChatTarget {
  chatId: string;
  /** Forum topic (Telegram) or thread channel (Discord). */
  threadId?: string;
  /** Platform message id to reply to. Adapters never fail because that message is gone. */
  replyTo?: string;
}

/** One chunk to send, already split to the channel's limit. */
export interface OutgoingText {
  text: string;
  /** `formatted`: `text` is in the channel's {@link TextFormatting}; `plain`: send as literal text. */
  mode: 'formatted' | 'plain';
  /**
   * Stable id of this chunk's delivery (the reply's id and the chunk's index), the same on every
   * retry: a channel that can make its append idempotent (the web chat) stores the chunk once per id.
   */
  deliveryId?: string;
  /**
   * Buttons under this chunk (the last of its message), each sending its command when pressed. A
   * channel without buttons leaves them out: the message's text says how to type the commands.
   */
  choices?: readonly MessageChoice[];
  /** Set on every chunk of an approval question: how many questions its tool round asks (OutboundMessage.questions). */
  questions?: number;
  /**
   * Set on the first chunk of a reply that ends a live reply (its id): a
   * channel that shows drafts (the web chat's live bubble) replaces the draft with this message.
   */
  liveReplyId?: string;
  /**
   * Set on every chunk of the message that answers a turn: the turn's reply, or the notice that
   * stands in for it (a failure, "Stopped."). A channel that waits for a turn's answer (the
   * OpenAI-compatible API) ends its wait on it; other notices (compaction, approvals) lack it.
   */
  answersTurn?: boolean;
  /**
   * Set on every chunk of what a turn sends (its reply, notices, approval questions) and of the
   * gateway's own answers: the ids of the inbound messages it answers (the turn's, and the messages
   * whose decisions resumed it; a command's own). A channel that hands a message to one request
   * (the OpenAI-compatible API) hands it to theirs only.
   */
  answers?: readonly string[];
  /** Set on every chunk of a notice answering the turn because a spend limit holds (OutboundMessage.refusal). */
  refusal?: 'over_budget';
}

/** Where a partial reply is shown: the chat, and whether it is private (Telegram drafts exist only there). */
export interface LiveReplyChat extends ChatTarget {
  chatType?: 'private' | 'group';
}

/** One partial reply to show while the model writes it (streaming). */
export interface DraftUpdate {
  /** The id of the reply the turn will commit. */
  liveReplyId: string;
  /** This stream's update number at this gateway: 0 starts (or restarts) the draft; later ones add `appended`. */
  seq: number;
  /** The whole text so far (unformatted). */
  text: string;
  /** What was added since the previous update (the whole text when `seq` is 0). */
  appended: string;
  /**
   * The ids of the inbound messages the turn writing it answers (its own, and messages that joined
   * it): a channel that shows it to one request (the OpenAI-compatible API) shows it to theirs only.
   * Absent: not known.
   */
  answers?: readonly string[];
}

/** What the platform answered to a successful send. */
export interface SentMessage {
  /** Platform message id (as a string). */
  messageId: string;
}

/**
 * Whether a channel's receiving connection works now (see {@link Channel.health}). When not:
 * `reason` is the platform's answer in one line (never a token), `sinceMs` when the trouble began
 * (ms since epoch), and `tokenRejected` is set when the platform refused the bot token (401).
 */
export type ChannelHealth = { ok: true } | { ok: false; reason: string; sinceMs: number; tokenRejected?: boolean };

/**
 * Called by an adapter for every normalised incoming message. The adapter treats the platform
 * update as handled only once the returned promise resolves; a rejection means "not handled"
 * (Telegram re-delivers it; the web API answers 503 so the client retries). The gateway resolves
 * with its verdict, which an adapter that answers refusals itself (`refusalsAnswered`) shows.
 */
export type InboundHandler = (message: InboundMessage) => Promise<InboundVerdict | void>;

/**
 * A chat platform connection. Adapters normalise platform updates into `InboundMessage`s and
 * send already-formatted, already-split chunks. Every error they throw is a `ChannelError`
 * with one of {@link CHANNEL_ERROR_CODES}, and never contains a bot token.
 */
export interface Channel {
  readonly name: ChannelName;
  /** Longest single message the platform accepts, in {@link lengthUnit}s. */
  readonly maxMessageLength: number;
  readonly lengthUnit: LengthUnit;
  readonly formatting: TextFormatting;
  /** How often the typing indicator must be renewed to stay visible, in ms. */
  readonly typingIntervalMs: number;
  /** Connects and starts delivering updates to `onMessage`. Resolves once connected. */
  start(onMessage: InboundHandler): Promise<void>;
  /** Stops receiving updates and disconnects. Idempotent. */
  stop(): Promise<void>;
  /**
   * Optional: whether the receiving connection works now, between `start` and `stop` (Telegram's
   * long polls, Discord's gateway connection). Down once it failed after connecting (polls failing
   * in a row, a closed connection being reopened), up again at the first success. Cheap: read on
   * every heartbeat. Absent: the channel counts as up once started.
   */
  health?(): ChannelHealth;
  /**
   * Sends one chunk. `@throws` ChannelError (`CHANNEL_RATE_LIMITED` with `retryAfterMs`,
   * `CHANNEL_TRANSIENT`, `CHANNEL_FORMAT_REJECTED`, `CHANNEL_PERMANENT`).
   */
  send(target: ChatTarget, message: OutgoingText): Promise<SentMessage>;
  /** Shows the typing indicator once (it fades after a few seconds). `@throws` ChannelError. */
  sendTyping(target: ChatTarget): Promise<void>;
  /**
   * Optional: downloads the bytes of one attachment of a message this channel delivered, at most
   * `maxBytes` of them. `@throws` ChannelError (`CHANNEL_FILE_TOO_LARGE` when over the limit,
   * `CHANNEL_TRANSIENT`, `CHANNEL_PERMANENT`); its message never contains a bot token.
   */
  downloadAttachment?(attachment: Attachment, options: DownloadOptions): Promise<Buffer>;
  /**
   * Optional (streaming): shows `draft` as a preview the final message replaces (Telegram's
   * private-chat drafts, the web chat's live bubble). Resolves false when this chat has no drafts
   * (the gateway then edits a message in place, when the channel can). `@throws` ChannelError.
   */
  sendDraft?(target: LiveReplyChat, draft: DraftUpdate): Promise<boolean>;
  /**
   * True when drafts are shown only to this process's own clients (the web chat: every gateway shows
   * its own). Otherwise the chat is the platform's, the same for every gateway: one gateway at a time
   * shows a stream there (src/live-reply/record.ts).
   */
  readonly localDrafts?: boolean;
  /**
   * True when `send` with a `deliveryId` it already stored stores nothing and answers the first
   * message's id (the web chat over Redis: the append is its own delivery record). The gateway's
   * delivery then keeps no ledger of its own for this channel's chunks (no Redis reads or writes
   * beyond the send). Default false.
   */
  readonly sendsOncePerDeliveryId?: boolean;
  /** Optional (streaming): the draft of `liveReplyId` was no reply (tool calls follow, or the call failed): stop showing it. */
  clearDraft?(target: LiveReplyChat, liveReplyId: string): Promise<void>;
  /**
   * Optional (streaming): replaces the text of a message the bot sent. An unchanged text counts as
   * done (a retried edit is idempotent). `@throws` ChannelError, like `send`.
   */
  editMessage?(target: ChatTarget, messageId: string, message: OutgoingText): Promise<void>;
  /**
   * Optional: replaces the text of a message the bot sent with buttons (a decided approval question)
   * and takes its buttons away. The same text again counts as done. `@throws` ChannelError, like `send`.
   */
  closeChoices?(target: ChatTarget, messageId: string, message: OutgoingText): Promise<void>;
  /**
   * Optional, for a channel that is its own delivery ledger ({@link sendsOncePerDeliveryId}): the id of
   * the message it stored under `deliveryId`, while it keeps it; undefined after.
   */
  sentMessageId?(target: ChatTarget, deliveryId: string): Promise<string | undefined>;
  /** Optional (streaming): deletes a message the bot sent; one already gone counts as deleted. `@throws` ChannelError. */
  deleteMessage?(target: ChatTarget, messageId: string): Promise<void>;
}

const KIND_TO_CODE: Record<FailureKind, string> = {
  rate_limited: CHANNEL_ERROR_CODES.rateLimited,
  transient: CHANNEL_ERROR_CODES.transient,
  format_rejected: CHANNEL_ERROR_CODES.formatRejected,
  permanent: CHANNEL_ERROR_CODES.permanent,
};

/**
 * The one way adapters turn a failed platform call into a {@link ChannelError}: the failure is
 * classified once (src/core/retry.ts) and the code, retryability and wait follow from it.
 * `message` says what failed and for which chat; a rate limit's wait is appended to it.
 */
export function toChannelError(message: string, failure: RemoteFailure, cause: unknown): ChannelError {
  const classified = classifyFailure(failure);
  const retryAfter = classified.retryAfterMs !== undefined ? `, retry after ${Math.ceil(classified.retryAfterMs / 1000)} s` : '';
  return new ChannelError(message.endsWith(')') ? `${message.slice(0, -1)}${retryAfter})` : `${message}${retryAfter}`, {
    retryable: isRetryableKind(classified.kind),
    retryAfterMs: classified.retryAfterMs,
    code: KIND_TO_CODE[classified.kind],
    cause,
  });
}

/** What an adapter reads from an error its platform's client threw: the failure, the words, the cause kept. */
export interface PlatformFailure {
  failure: RemoteFailure;
  /** Said in parentheses after `<operation> failed for <where>`, e.g. `429: rate limited`. */
  detail: string;
  /** The error kept as `cause`; the thrown error itself when absent. */
  cause?: unknown;
}

/**
 * Converts whatever a platform call threw into a {@link ChannelError} through {@link toChannelError}:
 * `<operation> failed for <where> (<detail>)`, `describe` reading the platform's own errors. A
 * ChannelError passes through unchanged; `where` (e.g. `telegram:123`) is left out when undefined.
 */
export function toPlatformChannelError(err: unknown, operation: string, where: string | undefined, describe: (err: unknown) => PlatformFailure): ChannelError {
  if (err instanceof ChannelError) return err;
  const { failure, detail, cause = err } = describe(err);
  return toChannelError(`${operation} failed${where === undefined ? '' : ` for ${where}`} (${detail})`, failure, cause);
}
