import type { JobsOptions } from 'bullmq';
import type { OutboundMessage } from '../core/inbound.js';

/**
 * Name of the outbound queue's backoff strategy: the outbound consumer computes the delay of a
 * retried delivery with the retry policy of src/core/retry.ts (BullMQ `settings.backoffStrategy`).
 */
export const OUTBOUND_BACKOFF = 'chatgate-retry-policy';

/**
 * The one set of options of an outbound job. `jobId` is the reply's stable id, so a retried turn
 * re-adding its reply is a no-op while the job is kept: a delivered reply for a day, one that
 * failed for good for a week (`chatgate failed` shows it). Eight delivery attempts; rate limits
 * do not spend them (the consumer delays the job until the platform's retry-after).
 */
export const OUTBOUND_JOB_OPTIONS = Object.freeze({
  attempts: 8,
  backoff: { type: OUTBOUND_BACKOFF },
  removeOnComplete: { age: 86_400 },
  removeOnFail: { age: 7 * 86_400 },
}) satisfies JobsOptions;

/**
 * Where replies are enqueued: a BullMQ queue, or the sharded outbound queue (src/queue/sharded.ts),
 * which puts each reply in the shard of its session.
 */
export interface OutboundSink {
  add(name: string, data: OutboundMessage, opts: JobsOptions): Promise<unknown>;
}

/**
 * Enqueues `message` for delivery by the gateway: the only producer of the outbound queue, for
 * replies (workers) and notices (ingest) alike. Idempotent per `message.id`.
 */
export async function enqueueOutbound(queue: OutboundSink, message: OutboundMessage): Promise<void> {
  await queue.add(message.kind, message, { ...OUTBOUND_JOB_OPTIONS, jobId: message.id });
}
