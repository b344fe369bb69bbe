import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { OutboundMessage } from '../core/inbound.js';
import { ChannelError } from '../errors.js';
import type { Logger } from '../log.js';
import { deliveryFailuresTotal } from '../monitor/metrics.js';
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
 * Consumes the outbound queue: each job is one reply, delivered through its channel. Permanent
 * failures (chat not found, bot blocked) end the job without retries; transient ones are retried
 * by BullMQ's attempts and backoff, and the delivery ledger makes sure no chunk is sent twice.
 * Jobs of one session are delivered one after another, in the order the consumer took them; a
 * reply taken while an earlier one of its session failed transiently and waits for BullMQ's
 * retry is held back (moved to delayed for `orderRetryMs`, attempts untouched) until the earlier
 * one is delivered or failed for good — at most `maxOrderHoldMs` after it started waiting.
 */
export function createOutboundConsumer(
  deps: { redis: RedisClient; delivery: Delivery; logger: Logger; onDelivered?: (message: OutboundMessage) => void },
  options: OutboundConsumerOptions,
): Worker<OutboundMessage> {
  const log = deps.logger.child({ component: 'outbound' });
  const perChat = createKeyedQueue();
  const order = createOutboundOrder({ redis: deps.redis }, { ...options, maxHoldMs: options.maxOrderHoldMs });
  const orderRetryMs = options.orderRetryMs ?? 1000;
  const process = (job: Job<OutboundMessage>, token?: string) => perChat.run(job.data.sessionId, async () => {
    if (!(await order.mayDeliver(job.data.sessionId, jobIdOf(job)))) return holdBack(job, token);
    return deliverJob(job);
  });
  const holdBack = async (job: Job<OutboundMessage>, token?: string): Promise<never> => {
    log.debug({ sessionId: job.data.sessionId, jobId: job.id }, 'reply held back behind an older one pending a retry');
    await job.moveToDelayed(Date.now() + orderRetryMs, token);
    throw new DelayedError();
  };
  const deliverJob = async (job: Job<OutboundMessage>) => {
    const message = job.data;
    try {
      const result = await deps.delivery.deliver(message);
      await order.settle(message.sessionId, jobIdOf(job));
      log.info({ sessionId: message.sessionId, channel: message.channel, jobId: job.id, chunks: result.chunks, sent: result.sent, skipped: result.skipped }, 'reply delivered');
      deps.onDelivered?.(message);
      return result;
    } catch (err) {
      const reason = err instanceof ChannelError ? (err.retryable ? 'transient' : 'permanent') : 'transient';
      deliveryFailuresTotal.inc({ channel: message.channel, reason });
      log.warn({ err, sessionId: message.sessionId, channel: message.channel, jobId: job.id, attempt: job.attemptsMade + 1 }, 'reply not delivered');
      const permanent = err instanceof ChannelError && !err.retryable;
      await settleOrRecord(order, job, permanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1));
      if (permanent) throw new UnrecoverableError(err.message);
      throw err;
    }
  };
  return new Worker<OutboundMessage>(options.outboundQueue, process, {
    connection: deps.redis, prefix: options.queuePrefix, concurrency: options.concurrency ?? 8,
  });
}

function jobIdOf(job: Job<OutboundMessage>): string {
  return job.id ?? job.data.id;
}

/** A job that failed for good stops holding its session back; one that will be retried starts to. */
async function settleOrRecord(order: OutboundOrder, job: Job<OutboundMessage>, final: boolean): Promise<void> {
  if (final) await order.settle(job.data.sessionId, jobIdOf(job));
  else await order.markPending(job.data.sessionId, jobIdOf(job));
}
