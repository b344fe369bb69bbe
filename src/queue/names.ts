import { createHash } from 'node:crypto';

/** Default BullMQ prefix: one hash tag, so every queue key lands in one Redis Cluster slot. */
export const DEFAULT_QUEUE_PREFIX = '{cgq}';
/** Default name of the queue of turn jobs (one pending per session). */
export const DEFAULT_TURN_QUEUE = 'turns';
/** Default name of the queue of replies for the gateway to deliver. */
export const DEFAULT_OUTBOUND_QUEUE = 'outbound';

/** Payload of a turn job: which session has messages waiting in its inbox. */
export interface TurnJobData {
  sessionId: string;
}

/** Queue names and prefix, shared by producers and workers. */
export interface QueueNames {
  /** BullMQ prefix. Default `{cgq}`. */
  queuePrefix: string;
  /** Default `turns`. */
  turnQueue: string;
  /** Default `outbound`. */
  outboundQueue: string;
}

/** Resolves queue names; names must not contain `:`. @throws Error naming the bad option. */
export function resolveQueueNames(options: Partial<QueueNames> = {}): QueueNames {
  const names = {
    queuePrefix: options.queuePrefix ?? DEFAULT_QUEUE_PREFIX,
    turnQueue: options.turnQueue ?? DEFAULT_TURN_QUEUE,
    outboundQueue: options.outboundQueue ?? DEFAULT_OUTBOUND_QUEUE,
  };
  for (const field of ['turnQueue', 'outboundQueue'] as const) {
    if (names[field].includes(':')) throw new Error(`\`${field}\` must not contain ':' (got ${names[field]})`);
  }
  return names;
}

/** Deduplication id of a session's turn job (no `:`; stable per session). */
export function turnDedupId(sessionId: string): string {
  return `turn-${digest(sessionId)}`;
}

/**
 * Stable id of the reply to a set of inbound messages: a retried turn derives the same id, so the
 * outbound queue keeps one job. `index` numbers several notices of one turn; `failed` is the notice
 * that a turn failed for good (its messages went to the dead-letter list).
 */
export function replyJobId(inboundIds: readonly string[], kind: 'reply' | 'notice' | 'failed' = 'reply', index = 0): string {
  return `${kind}-${digest(inboundIds.join('\n'))}-${index}`;
}

function digest(text: string): string {
  return createHash('sha1').update(text).digest('hex').slice(0, 24);
}
