import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { OutboundMessage } from '../core/inbound.js';
import { ChannelError } from '../errors.js';
import type { Logger } from '../log.js';
import { deliveryFailuresTotal } from '../monitor/metrics.js';
import type { RedisClient } from '../redis/client.js';
import type { Delivery } from './delivery.js';

/** Options of {@link createOutboundConsumer}. */
export interface OutboundConsumerOptions {
  queuePrefix: string;
  outboundQueue: string;
  /** Replies delivered in parallel (different chats). Default 8. */
  concurrency?: number;
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
 * Jobs of one session are delivered one after another, in the order the consumer took them.
 */
export function createOutboundConsumer(
  deps: { redis: RedisClient; delivery: Delivery; logger: Logger; onDelivered?: (message: OutboundMessage) => void },
  options: OutboundConsumerOptions,
): Worker<OutboundMessage> {
  const log = deps.logger.child({ component: 'outbound' });
  const perChat = createKeyedQueue();
  const process = (job: Job<OutboundMessage>) => perChat.run(job.data.sessionId, () => deliverJob(job));
  const deliverJob = async (job: Job<OutboundMessage>) => {
    const message = job.data;
    try {
      const result = await deps.delivery.deliver(message);
      log.info({ sessionId: message.sessionId, channel: message.channel, jobId: job.id, chunks: result.chunks, sent: result.sent, skipped: result.skipped }, 'reply delivered');
      deps.onDelivered?.(message);
      return result;
    } catch (err) {
      const reason = err instanceof ChannelError ? (err.retryable ? 'transient' : 'permanent') : 'transient';
      deliveryFailuresTotal.inc({ channel: message.channel, reason });
      log.warn({ err, sessionId: message.sessionId, channel: message.channel, jobId: job.id, attempt: job.attemptsMade + 1 }, 'reply not delivered');
      if (err instanceof ChannelError && !err.retryable) throw new UnrecoverableError(err.message);
      throw err;
    }
  };
  return new Worker<OutboundMessage>(options.outboundQueue, process, {
    connection: deps.redis, prefix: options.queuePrefix, concurrency: options.concurrency ?? 8,
  });
}
