/**
 * What the outbound consumer (src/outbound/consumer.ts) does with one stream entry: deliver it in
 * its chat's order, then ack it, delay it (rate limit, backoff, held behind an older reply) or
 * fail it for good with its reason. The one retry layer of deliveries.
 */
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import type { OutboundMessage } from '../core/inbound.js';
import { backoffDelayMs, DEFAULT_RETRY_AFTER_MS, type RetryPolicy } from '../core/retry.js';
import { ChannelError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { OUTBOUND_ATTEMPTS } from './outbound-queue.js';
import { isMalformed, parseOutboundEntry, type ParsedEntry } from './parse-entry.js';
import type { OutboundEntry, OutboundShard } from './outbound-shard.js';
import type { Delivery } from './delivery.js';
import type { OutboundOrder } from './outbound-order.js';

/** What became of a reply the consumer took. */
export type OutboundOutcome =
  | { type: 'delivered'; id: string; attempts: number }
  | { type: 'delayed'; id: string; attempts: number; dueMs: number; why: 'rate_limited' | 'transient' | 'order' }
  | { type: 'failed'; id: string; attempts: number; reason: string };

/** What {@link handleEntry} works with (one per consumer). */
export interface EntryContext {
  shard: OutboundShard;
  delivery: Delivery;
  log: Logger;
  /** Counts every failed delivery attempt by reason (`rate_limited`, `transient`, `permanent`). */
  metrics: Metrics;
  onDelivered?: (message: OutboundMessage) => void;
  onOutcome?: (outcome: OutboundOutcome) => void;
  order: OutboundOrder;
  orderRetryMs: number;
  maxRateLimitedMs: number;
  maxStalledCount: number;
  policy: RetryPolicy;
  random: () => number;
  perChat: { run<T>(key: string, task: () => Promise<T>): Promise<T> };
  /** Told when an entry it delayed is due, so this consumer promotes it on time. */
  wakePromoter(dueMs: number): void;
}

/** Handles one entry taken from the stream (read, or claimed from a dead gateway); settles it unless Redis fails. */
export async function handleEntry(ctx: EntryContext, entry: OutboundEntry): Promise<void> {
  const parsed = parseOutboundEntry(entry);
  if (isMalformed(parsed)) {
    ctx.log.error({ entryId: entry.entryId, replyId: parsed.replyId, reason: parsed.error }, 'outbound entry failed for good: it cannot be delivered');
    // It took its place in its session's order when it was added: it must not hold the later replies back.
    if (parsed.sessionId) await ctx.order.settle(parsed.sessionId, parsed.replyId);
    return failForGood(ctx, entry, { replyId: parsed.replyId, attempts: 0 }, parsed.error);
  }
  const { message, replyId } = parsed;
  const stalls = entry.deliveries - 1;
  if (stalls > ctx.maxStalledCount) {
    await ctx.order.settle(message.sessionId, replyId);
    return failForGood(ctx, entry, parsed, `interrupted by a dying gateway ${stalls} times (more than maxStalledCount ${ctx.maxStalledCount})`);
  }
  return ctx.perChat.run(message.sessionId, async () => {
    if (await ctx.order.mayDeliver(message.sessionId, replyId)) return deliverEntry(ctx, entry, parsed);
    ctx.log.debug({ sessionId: message.sessionId, jobId: replyId }, 'reply held back behind an older one waiting for a retry');
    return delay(ctx, entry, parsed, ctx.orderRetryMs, parsed.attempts, 'order');
  });
}

async function deliverEntry(ctx: EntryContext, entry: OutboundEntry, parsed: ParsedEntry): Promise<void> {
  const { message, replyId } = parsed;
  const log = ctx.log.child({ sessionId: message.sessionId, channel: message.channel, jobId: replyId });
  let result: Awaited<ReturnType<Delivery['deliver']>>;
  try {
    result = await ctx.delivery.deliver(message);
  } catch (err) {
    return onFailure(ctx, entry, parsed, toFailure(err), log);
  }
  await ctx.shard.ack(entry.entryId, { id: replyId, sessionId: message.sessionId });
  // The one info line of a delivered reply (the worker's commit and the channel's send log at debug).
  log.info({
    kind: message.kind, chars: message.text.length, chunks: result.chunks, sent: result.sent, skipped: result.skipped,
    attempt: parsed.attempts + 1, sinceCommitMs: Date.now() - parsed.enqueuedAtMs,
  }, 'reply delivered');
  ctx.onOutcome?.({ type: 'delivered', id: replyId, attempts: parsed.attempts + 1 });
  ctx.onDelivered?.(message);
}

/** Rate limited: delayed, no attempt spent. Permanent or attempts used up: failed for good. Transient: one attempt spent. */
async function onFailure(ctx: EntryContext, entry: OutboundEntry, parsed: ParsedEntry, failure: DeliveryFailure, log: Logger): Promise<void> {
  const { sessionId, channel } = parsed.message;
  ctx.metrics.record({ type: 'delivery_failure', channel, reason: failure.reason });
  if (failure.reason === 'rate_limited' && Date.now() + failure.retryAfterMs - parsed.enqueuedAtMs <= ctx.maxRateLimitedMs) {
    log.warn({ err: failure.error, retryAfterMs: failure.retryAfterMs }, 'reply rate limited; delayed until the platform allows it');
    await ctx.order.markPending(sessionId, parsed.replyId);
    return delay(ctx, entry, parsed, failure.retryAfterMs, parsed.attempts, 'rate_limited');
  }
  const attempts = parsed.attempts + 1;
  log.warn({ err: failure.error, attempt: attempts, reason: failure.reason }, 'reply not delivered');
  if (failure.reason === 'permanent' || attempts >= OUTBOUND_ATTEMPTS) {
    await ctx.order.settle(sessionId, parsed.replyId);
    return failForGood(ctx, entry, { ...parsed, attempts }, failure.error.message);
  }
  await ctx.order.markPending(sessionId, parsed.replyId);
  const backoffMs = retryAfterOf(failure.error) ?? backoffDelayMs(attempts, ctx.policy, ctx.random());
  return delay(ctx, entry, parsed, backoffMs, attempts, 'transient');
}

async function delay(ctx: EntryContext, entry: OutboundEntry, parsed: ParsedEntry, delayMs: number, attempts: number, why: 'rate_limited' | 'transient' | 'order'): Promise<void> {
  const dueMs = Date.now() + delayMs;
  const data = entry.fields.data ?? JSON.stringify(parsed.message);
  if (!await ctx.shard.delay(entry.entryId, parsed.replyId, dueMs, { data, attempts, enqueuedAtMs: parsed.enqueuedAtMs })) return;
  ctx.wakePromoter(dueMs);
  ctx.onOutcome?.({ type: 'delayed', id: parsed.replyId, attempts, dueMs, why });
}

async function failForGood(ctx: EntryContext, entry: OutboundEntry, parsed: Pick<ParsedEntry, 'replyId' | 'attempts'> & { message?: OutboundMessage }, reason: string): Promise<void> {
  const now = Date.now();
  const record = { id: parsed.replyId, reason, attempts: parsed.attempts, failedAtMs: now, ...(parsed.message ? { message: parsed.message } : {}) };
  if (!await ctx.shard.fail(entry.entryId, record, now)) return;
  ctx.onOutcome?.({ type: 'failed', id: parsed.replyId, attempts: parsed.attempts, reason });
}

type DeliveryFailure =
  | { reason: 'rate_limited'; retryAfterMs: number; error: ChannelError }
  | { reason: 'transient' | 'permanent'; error: Error };

/** Channels throw ChannelError; anything else is unexpected, and treated as transient. */
function toFailure(err: unknown): DeliveryFailure {
  const error = err instanceof Error ? err : new Error(String(err));
  if (!(err instanceof ChannelError)) return { reason: 'transient', error };
  if (!err.retryable) return { reason: 'permanent', error: err };
  if (err.code === CHANNEL_ERROR_CODES.rateLimited) return { reason: 'rate_limited', retryAfterMs: err.retryAfterMs ?? DEFAULT_RETRY_AFTER_MS, error: err };
  return { reason: 'transient', error: err };
}

function retryAfterOf(err: Error): number | undefined {
  return err instanceof ChannelError ? err.retryAfterMs : undefined;
}
