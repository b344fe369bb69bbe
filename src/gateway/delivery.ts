import type { Channel, ChatTarget, SentMessage } from '../../channels/channel.js';
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import type { ChannelName, OutboundMessage } from '../core/inbound.js';
import { markdownToTelegramHtml } from '../core/markdown.js';
import { backoffDelayMs, type BackoffOptions } from '../core/retry.js';
import { planChunks, type PlannedChunk } from '../core/split.js';
import { ChannelError } from '../errors.js';
import { createSilentLogger, type Logger } from '../log.js';
import type { DeliveryLedger } from './delivery-ledger.js';

/** Dependencies of {@link createDelivery}. */
export interface DeliveryDeps {
  /** The started channels, by name. */
  channels: ReadonlyMap<ChannelName, Channel>;
  ledger: DeliveryLedger;
  log?: Logger;
  /** Waits `ms`; injectable for tests. Default `setTimeout`. */
  sleep?: (ms: number) => Promise<void>;
  /** Random number in [0, 1) for backoff jitter. Default `Math.random`. */
  random?: () => number;
}

/** Options of {@link createDelivery}. */
export interface DeliveryOptions {
  /** Attempts per chunk (rate limits and transient errors) before giving up. Default 5. */
  maxAttempts?: number;
  /** Backoff of transient errors. Default base 500 ms, max 30 s, jitter 0.2. */
  backoff?: BackoffOptions;
  /** A `retry_after` longer than this (ms) fails the attempt instead of waiting. Default 120 000. */
  maxRetryAfterMs?: number;
}

/** Resolved {@link DeliveryOptions}. */
export type ResolvedDeliveryOptions = Required<DeliveryOptions>;

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
   * sends only what is missing. `@throws` ChannelError: `retryable` false for permanent failures
   * (chat not found, bot blocked — logged, do not retry), true when attempts ran out.
   */
  deliver(message: OutboundMessage): Promise<DeliveryResult>;
}

const DEFAULTS = {
  maxAttempts: 5,
  backoff: { baseMs: 500, maxMs: 30_000, jitterRatio: 0.2 },
  maxRetryAfterMs: 120_000,
} satisfies ResolvedDeliveryOptions;

/** Creates the outbound delivery of the gateway. */
export function createDelivery(deps: DeliveryDeps, options: DeliveryOptions = {}): Delivery {
  const resolved: ResolvedDeliveryOptions = { ...DEFAULTS, ...options, backoff: { ...DEFAULTS.backoff, ...options.backoff } };
  if (!Number.isInteger(resolved.maxAttempts) || resolved.maxAttempts < 1) {
    throw new RangeError(`\`maxAttempts\` must be an integer ≥ 1 (got ${resolved.maxAttempts})`);
  }
  const log = (deps.log ?? createSilentLogger()).child({ component: 'delivery' });
  const context: SendContext = {
    options: resolved,
    sleep: deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    random: deps.random ?? Math.random,
    log,
  };
  return {
    async deliver(message) {
      const channel = deps.channels.get(message.channel);
      if (!channel) {
        throw new ChannelError(`no ${message.channel} channel to deliver reply ${message.id}`, { retryable: false, code: CHANNEL_ERROR_CODES.notStarted });
      }
      const ref = { sessionId: message.sessionId, replyId: message.id };
      const chunks = planFor(channel, message.text);
      const already = await deps.ledger.sentChunks(ref);
      const result: DeliveryResult = { replyId: message.id, chunks: chunks.length, sent: 0, skipped: 0, plainFallbacks: 0, messageIds: [] };
      const replyLog = log.child({ sessionId: message.sessionId, channel: message.channel, replyId: message.id });
      for (const [index, chunk] of chunks.entries()) {
        const previous = already.get(index);
        if (previous !== undefined) {
          result.skipped++;
          result.messageIds.push(previous);
          continue;
        }
        const target: ChatTarget = { chatId: message.chatId, threadId: message.threadId, replyTo: index === 0 ? message.replyTo : undefined };
        const outcome = await sendChunk(channel, target, chunk, { ...context, log: replyLog.child({ chunk: index }) });
        await deps.ledger.markSent(ref, index, outcome.sent.messageId);
        result.sent++;
        if (outcome.plainFallback) result.plainFallbacks++;
        result.messageIds.push(outcome.sent.messageId);
      }
      replyLog.info({ chunks: result.chunks, sent: result.sent, skipped: result.skipped }, 'reply delivered');
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

interface SendContext {
  options: ResolvedDeliveryOptions;
  sleep: (ms: number) => Promise<void>;
  random: () => number;
  log: Logger;
}

/** Sends one chunk: formatted first, plain on a formatting rejection, retrying rate limits and transient errors. */
async function sendChunk(channel: Channel, target: ChatTarget, chunk: PlannedChunk, context: SendContext): Promise<{ sent: SentMessage; plainFallback: boolean }> {
  let plain = chunk.formatted === undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      const sent = await channel.send(target, plain ? { text: chunk.plain, mode: 'plain' } : { text: chunk.formatted!, mode: 'formatted' });
      return { sent, plainFallback: plain && chunk.formatted !== undefined };
    } catch (err) {
      const error = toChannelError(err, channel.name);
      if (error.code === CHANNEL_ERROR_CODES.formatRejected && !plain) {
        context.log.warn({ err: error }, 'formatting rejected; resending as plain text');
        plain = true;
        attempt--;
        continue;
      }
      if (!error.retryable) {
        context.log.error({ err: error, chatId: target.chatId }, 'reply chunk not delivered: permanent failure');
        throw error;
      }
      const delayMs = error.retryAfterMs ?? backoffDelayMs(attempt, context.options.backoff, context.random());
      if (attempt >= context.options.maxAttempts || delayMs > context.options.maxRetryAfterMs) {
        context.log.warn({ err: error, attempt, delayMs }, 'reply chunk not delivered: giving up for now');
        throw error;
      }
      context.log.warn({ err: error, attempt, delayMs }, 'reply chunk failed; retrying');
      await context.sleep(delayMs);
    }
  }
}

/** Channels throw ChannelError; anything else is a bug or an unexpected failure, treated as transient. */
function toChannelError(err: unknown, channel: ChannelName): ChannelError {
  if (err instanceof ChannelError) return err;
  return new ChannelError(`send failed on ${channel} (unexpected error)`, { retryable: true, code: CHANNEL_ERROR_CODES.transient, cause: err });
}
