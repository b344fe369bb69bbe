import type { Channel, ChatTarget, OutgoingText, SentMessage } from '../../channels/channel.js';
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import type { ChannelName, OutboundMessage } from '../core/inbound.js';
import { markdownToTelegramHtml } from '../core/markdown.js';
import { planChunks, type PlannedChunk } from '../core/split.js';
import { ChannelError } from '../errors.js';
import { createSilentLogger, lazyChild, type LazyLogger, type Logger } from '../log.js';
import type { DeliveryLedger } from './delivery-ledger.js';

/** The ledger of a channel that is its own: nothing recorded, every chunk is sent (and answered once). */
const NONE_SENT: ReadonlyMap<number, string> = new Map();

/** Dependencies of {@link createDelivery}. */
export interface DeliveryDeps {
  /** The started channels, by name. */
  channels: ReadonlyMap<ChannelName, Channel>;
  ledger: DeliveryLedger;
  log?: Logger;
  /**
   * Live replies (src/live-reply/gateway-live-replies.ts): asked before a reply's first chunk; names the message its
   * live reply is shown in, which the first chunk is edited into instead of being sent. Default none.
   */
  liveReplies?: { takeOver(message: OutboundMessage): Promise<string | undefined> };
}

/** What happened to one reply. */
export interface DeliveryResult {
  replyId: string;
  /** Number of chunks the reply was split into. */
  chunks: number;
  /** Chunks sent by this call. */
  sent: number;
  /** Chunks skipped because an earlier attempt had sent them. */
  skipped: number;
  /** Chunks resent as plain text after the platform rejected their formatting. */
  plainFallbacks: number;
  /** Platform message ids, by chunk index. */
  messageIds: string[];
}

/** Sends replies through their channel: format, split, send each chunk once. */
export interface Delivery {
  /**
   * Delivers `message`. Chunks recorded as sent are skipped, so calling it again after a failure
   * sends only what is missing. Nothing is retried or waited for here (the caller is the one retry
   * layer, see src/outbound/consumer.ts); only a rejected formatting is resent once as plain text.
   * `@throws` ChannelError of the first chunk that failed: `retryable` false for permanent
   * failures (chat not found, bot blocked), true with `retryAfterMs` for rate limits.
   */
  deliver(message: OutboundMessage): Promise<DeliveryResult>;
}

/** Creates the outbound delivery of the gateway. */
export function createDelivery(deps: DeliveryDeps): Delivery {
  const log = (deps.log ?? createSilentLogger()).child({ component: 'delivery' });
  return {
    async deliver(message) {
      const channel = deps.channels.get(message.channel);
      if (!channel) {
        throw new ChannelError(`no ${message.channel} channel to deliver reply ${message.id}`, { retryable: false, code: CHANNEL_ERROR_CODES.notStarted });
      }
      const ref = { sessionId: message.sessionId, replyId: message.id };
      const chunks = planFor(channel, message.text);
      // A channel that stores each delivery id once is its own ledger: a retried chunk's send answers its first id.
      const ledger = channel.sendsOncePerDeliveryId ? undefined : deps.ledger;
      const already = ledger ? await ledger.sentChunks(ref) : NONE_SENT;
      const result: DeliveryResult = { replyId: message.id, chunks: chunks.length, sent: 0, skipped: 0, plainFallbacks: 0, messageIds: [] };
      // Bound fields of this reply's warn and error lines: a child logger only when a line is written.
      const fields = { sessionId: message.sessionId, channel: message.channel, replyId: message.id };
      const liveReplyId = message.kind === 'reply' ? message.id : message.liveReplyId;
      const streamed = deps.liveReplies && liveReplyId ? await deps.liveReplies.takeOver(message) : undefined;
      for (const [index, chunk] of chunks.entries()) {
        const previous = already.get(index);
        if (previous !== undefined) {
          result.skipped++;
          result.messageIds.push(previous);
          continue;
        }
        const target: ChatTarget = { chatId: message.chatId, threadId: message.threadId, replyTo: index === 0 ? message.replyTo : undefined };
        const ids = {
          deliveryId: `${message.id}#${index}`, ...(index === 0 && deps.liveReplies && liveReplyId ? { liveReplyId } : {}),
          // A reply, or a notice in its place (it ends the reply's stream), answers the turn.
          ...(message.kind === 'reply' || message.liveReplyId !== undefined ? { answersTurn: true } : {}),
          ...(message.answers ? { answers: message.answers } : {}),
          ...(message.refusal ? { refusal: message.refusal } : {}),
          ...(message.questions ? { questions: message.questions } : {}),
          // The buttons go under the last chunk, after everything they are about.
          ...(index === chunks.length - 1 && message.choices ? { choices: message.choices } : {}),
        };
        const chunkLog = lazyChild(log, { ...fields, chunk: index });
        const outcome = index === 0 && streamed !== undefined
          ? await editOrSend(channel, target, streamed, chunk, ids, chunkLog)
          : await sendChunk(channel, target, chunk, ids, chunkLog);
        await ledger?.markSent(ref, index, outcome.sent.messageId);
        result.sent++;
        if (outcome.plainFallback) result.plainFallbacks++;
        result.messageIds.push(outcome.sent.messageId);
      }
      log.debug({ ...fields, chunks: result.chunks, sent: result.sent, skipped: result.skipped }, 'reply chunks sent');
      return result;
    },
  };
}

/** Splits and formats `markdown` for `channel`. */
export function planFor(channel: Pick<Channel, 'formatting' | 'maxMessageLength' | 'lengthUnit'>, markdown: string): PlannedChunk[] {
  const limit = channel.maxMessageLength;
  const unit = channel.lengthUnit;
  if (channel.formatting === 'telegram-html') return planChunks(markdown, { limit, unit, render: markdownToTelegramHtml });
  const chunks = planChunks(markdown, { limit, unit });
  return channel.formatting === 'plain' ? chunks.map((chunk) => ({ plain: chunk.plain })) : chunks;
}

/** Sends one chunk: formatted first, once more as plain text when the platform rejects the formatting. */
async function sendChunk(channel: Channel, target: ChatTarget, chunk: PlannedChunk, ids: Pick<OutgoingText, 'deliveryId' | 'liveReplyId' | 'choices' | 'questions' | 'answersTurn' | 'answers' | 'refusal'>, log: LazyLogger): Promise<{ sent: SentMessage; plainFallback: boolean }> {
  return formattedOrPlain(channel, chunk, log, (text, mode) => channel.send(target, { text, mode, ...ids }));
}

/**
 * Edits the first chunk into the message a partial reply was shown in (the same text again changes
 * nothing: a retried edit is idempotent); sends it instead when that message cannot be edited any
 * more (deleted by someone, too old). A rate limit or a transient failure is thrown: the job retries.
 */
async function editOrSend(channel: Channel, target: ChatTarget, messageId: string, chunk: PlannedChunk, ids: Pick<OutgoingText, 'deliveryId' | 'liveReplyId' | 'choices' | 'questions' | 'answersTurn' | 'answers' | 'refusal'>, log: LazyLogger): Promise<{ sent: SentMessage; plainFallback: boolean }> {
  if (!channel.editMessage) return sendChunk(channel, target, chunk, ids, log);
  const edit = channel.editMessage.bind(channel);
  try {
    return await formattedOrPlain(channel, chunk, log, async (text, mode) => {
      await edit(target, messageId, { text, mode });
      return { messageId };
    });
  } catch (err) {
    if (!(err instanceof ChannelError) || err.retryable) throw err;
    log().warn({ err, messageId }, 'the partial reply\'s message cannot be edited; sending the reply as a new message');
    return sendChunk(channel, target, chunk, ids, log);
  }
}

async function formattedOrPlain(channel: Channel, chunk: PlannedChunk, log: LazyLogger, put: (text: string, mode: OutgoingText['mode']) => Promise<SentMessage>): Promise<{ sent: SentMessage; plainFallback: boolean }> {
  if (chunk.formatted !== undefined) {
    try {
      return { sent: await put(chunk.formatted, 'formatted'), plainFallback: false };
    } catch (err) {
      const error = toChannelError(err, channel.name);
      if (error.code !== CHANNEL_ERROR_CODES.formatRejected) throw logged(error, log);
      log().warn({ err: error }, 'formatting rejected; resending as plain text');
    }
  }
  try {
    return { sent: await put(chunk.plain, 'plain'), plainFallback: chunk.formatted !== undefined };
  } catch (err) {
    throw logged(toChannelError(err, channel.name), log);
  }
}

function logged(error: ChannelError, log: LazyLogger): ChannelError {
  if (error.retryable) log().debug({ err: error, retryAfterMs: error.retryAfterMs }, 'reply chunk not sent; the job will be retried');
  else log().error({ err: error }, 'reply chunk not delivered: permanent failure');
  return error;
}

/** Channels throw ChannelError; anything else is a bug or an unexpected failure, treated as transient. */
function toChannelError(err: unknown, channel: ChannelName): ChannelError {
  if (err instanceof ChannelError) return err;
  return new ChannelError(`send failed on ${channel} (unexpected error)`, { retryable: true, code: CHANNEL_ERROR_CODES.transient, cause: err });
}
