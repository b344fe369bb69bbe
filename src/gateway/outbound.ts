import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import type { OutboundMessage } from '../core/inbound.js';
import { backoffDelayMs, DEFAULT_RETRY_AFTER_MS, DEFAULT_RETRY_POLICY, type RetryPolicy } from '../core/retry.js';
import { ChannelError } from '../errors.js';
import type { Logger } from '../log.js';
import { NOOP_METRICS, type Metrics } from '../metrics.js';
import type { RedisClient } from '../redis/client.js';
import type { Delivery } from './delivery.js';
import { createOutboundOrder, type OutboundOrder } from './outbound-order.js';

/** Options of {@link createOutboundConsumer}. */
export interface OutboundConsumerOptions {
  queuePrefix: string;
  outboundQueue: string;
  /** Replies delivered in parallel (different chats). Default 8. */
  concurrency?: number;
  /**
   * How long a reply waits (job moved to delayed, no attempt spent) before looking again when an
   * older reply of its session is still pending a retry, ms. Default 1000.
   */
  orderRetryMs?: number;
  /** How long a reply pending a retry may hold its session's later replies back, ms. Default 600 000. */
  maxOrderHoldMs?: number;
  /**
   * How long after it was enqueued a reply may still wait out rate limits without spending an
   * attempt, ms; later rate limits count as failed attempts (with their retry-after as backoff).
   * Default 3 600 000.
   */
  maxRateLimitedMs?: number;
  /**
   * BullMQ lock of a reply being delivered, renewed every half of it, ms. A gateway that dies
   * mid-delivery leaves its reply active until the lock expires; the next stall check then puts it
   * back (in its place: see src/gateway/outbound-order.ts). Default 5000.
   */
  lockDurationMs?: number;
  /** How often the consumer looks for replies whose gateway died (BullMQ `stalledInterval`), ms. Default 2000. */
  stalledIntervalMs?: number;
  /**
   * How many times a reply may be interrupted by a dying gateway and still be retried (BullMQ
   * `maxStalledCount`; BullMQ's default of 1 fails a reply for good at the second crash). Default 20.
   */
  maxStalledCount?: number;
  /** Backoff of transient failures between attempts (BullMQ's attempts are the retries). Default {@link DEFAULT_RETRY_POLICY}. */
  retry?: Partial<Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs' | 'jitterRatio'>>;
}

/**
 * Runs tasks one at a time per key, in the order they were submitted; different keys run in
 * parallel. Keeps one chat's replies (and their chunks) in order while other chats proceed.
 */
export function createKeyedQueue(): { run<T>(key: string, task: () => Promise<T>): Promise<T> } {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run(key, task) {
      const previous = tails.get(key) ?? Promise.resolve();
      const result = previous.then(task, task);
      const tail = result.catch(() => undefined);
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
  };
}

/**
 * Consumes the outbound queue: each job is one reply, delivered through its channel. This is the
 * one retry layer of deliveries (the channels and the delivery do not retry): a permanent failure
 * (chat not found, bot blocked) ends the job; a rate limit moves the job to delayed until the
 * platform's retry-after, without spending an attempt or holding a delivery slot; a transient
 * failure spends one of the job's attempts and is retried after the backoff of the retry policy
 * (src/core/retry.ts). The delivery ledger makes sure no chunk is sent twice.
 * Jobs of one session are delivered one after another, in the order the consumer took them; a
 * reply taken while an earlier one of its session is not delivered yet (waiting for a retry, or
 * interrupted by a gateway that died) is held back (moved to delayed for `orderRetryMs`, attempts
 * untouched) until the earlier one is delivered or failed for good — at most `maxOrderHoldMs`
 * after it started waiting. A crash mid-send may send the chunk in flight twice on Telegram and
 * Discord (at most once per crash); the web chat's append is idempotent (docs/operating.md).
 */
export function createOutboundConsumer(
  deps: { redis: RedisClient; delivery: Delivery; logger: Logger; metrics?: Metrics; onDelivered?: (message: OutboundMessage) => void; random?: () => number },
  options: OutboundConsumerOptions,
): Worker<OutboundMessage> {
  const ctx: ConsumerContext = {
    delivery: deps.delivery,
    onDelivered: deps.onDelivered,
    metrics: deps.metrics ?? NOOP_METRICS,
    log: deps.logger.child({ component: 'outbound' }),
    order: createOutboundOrder({ redis: deps.redis }, { ...options, maxHoldMs: options.maxOrderHoldMs }),
    orderRetryMs: options.orderRetryMs ?? 1000,
    maxRateLimitedMs: options.maxRateLimitedMs ?? 3_600_000,
  };
  const policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const random = deps.random ?? Math.random;
  const perChat = createKeyedQueue();
  const process = (job: Job<OutboundMessage>, token?: string) => perChat.run(job.data.sessionId, async () => {
    if (await ctx.order.mayDeliver(job.data.sessionId, jobIdOf(job))) return deliverJob(ctx, job, token);
    ctx.log.debug({ sessionId: job.data.sessionId, jobId: job.id }, 'reply held back behind an older one waiting for a retry');
    return delayJob(job, ctx.orderRetryMs, token);
  });
  return new Worker<OutboundMessage>(options.outboundQueue, process, {
    connection: deps.redis, prefix: options.queuePrefix, concurrency: options.concurrency ?? 8,
    lockDuration: options.lockDurationMs ?? 5000, stalledInterval: options.stalledIntervalMs ?? 2000, maxStalledCount: options.maxStalledCount ?? 20,
    // The delay before a failed job's next attempt (jobs carry `backoff: { type: OUTBOUND_BACKOFF }`).
    settings: { backoffStrategy: (attemptsMade, _type, err) => retryAfterOf(err) ?? backoffDelayMs(attemptsMade, policy, random()) },
  });
}

interface ConsumerContext {
  delivery: Delivery;
  onDelivered?: (message: OutboundMessage) => void;
  /** Counts every failed delivery attempt by reason (`rate_limited`, `transient`, `permanent`). */
  metrics: Metrics;
  log: Logger;
  order: OutboundOrder;
  orderRetryMs: number;
  maxRateLimitedMs: number;
}

async function deliverJob(ctx: ConsumerContext, job: Job<OutboundMessage>, token: string | undefined) {
  const message = job.data;
  const log = ctx.log.child({ sessionId: message.sessionId, channel: message.channel, jobId: job.id });
  let result: Awaited<ReturnType<Delivery['deliver']>>;
  try {
    result = await ctx.delivery.deliver(message);
  } catch (err) {
    return onFailure(ctx, job, toFailure(err), log, token);
  }
  await ctx.order.settle(message.sessionId, jobIdOf(job));
  // The one info line of a delivered reply (the worker's commit and the channel's send log at debug).
  log.info({
    kind: message.kind, chars: message.text.length, chunks: result.chunks, sent: result.sent, skipped: result.skipped,
    attempt: job.attemptsMade + 1, sinceCommitMs: Date.now() - job.timestamp,
  }, 'reply delivered');
  ctx.onDelivered?.(message);
  return result;
}

/** Rate limited: delayed, no attempt spent. Permanent: failed for good. Transient: one attempt spent. */
async function onFailure(ctx: ConsumerContext, job: Job<OutboundMessage>, failure: DeliveryFailure, log: Logger, token: string | undefined): Promise<never> {
  const { sessionId, channel } = job.data;
  ctx.metrics.record({ type: 'delivery_failure', channel, reason: failure.reason });
  if (failure.reason === 'rate_limited' && Date.now() + failure.retryAfterMs - job.timestamp <= ctx.maxRateLimitedMs) {
    log.warn({ err: failure.error, retryAfterMs: failure.retryAfterMs }, 'reply rate limited; delayed until the platform allows it');
    await ctx.order.markPending(sessionId, jobIdOf(job));
    return delayJob(job, failure.retryAfterMs, token);
  }
  log.warn({ err: failure.error, attempt: job.attemptsMade + 1, reason: failure.reason }, 'reply not delivered');
  const permanent = failure.reason === 'permanent';
  await settleOrRecord(ctx.order, job, permanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1));
  throw permanent ? new UnrecoverableError(failure.error.message) : failure.error;
}

/** Moves the active job to delayed for `delayMs` without spending an attempt (BullMQ `DelayedError`). */
async function delayJob(job: Job<OutboundMessage>, delayMs: number, token: string | undefined): Promise<never> {
  await job.moveToDelayed(Date.now() + delayMs, token);
  throw new DelayedError();
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

function retryAfterOf(err: Error | undefined): number | undefined {
  return err instanceof ChannelError ? err.retryAfterMs : undefined;
}

function jobIdOf(job: Job<OutboundMessage>): string {
  return job.id ?? job.data.id;
}

/** A job that failed for good stops holding its session back; one that will be retried starts to. */
async function settleOrRecord(order: OutboundOrder, job: Job<OutboundMessage>, final: boolean): Promise<void> {
  if (final) await order.settle(job.data.sessionId, jobIdOf(job));
  else await order.markPending(job.data.sessionId, jobIdOf(job));
}
