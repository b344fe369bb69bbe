import { createHash } from 'node:crypto';
import { shardOf, shardTag } from '../core/shard.js';

/** Default BullMQ prefix: one hash tag, so every queue key lands in one Redis Cluster slot. */
export const DEFAULT_QUEUE_PREFIX = '{cgq}';
/** Default name of the queue of turn jobs (one pending per session). */
export const DEFAULT_TURN_QUEUE = 'turns';
/** Default name of the queue of replies for the gateway to deliver. */
export const DEFAULT_OUTBOUND_QUEUE = 'outbound';

/** Payload of a turn job: which session has messages waiting in its inbox. */
export interface TurnJobData {
  sessionId: string;
  /**
   * An idle compaction job (workers/idle-compaction.ts): the session version it was scheduled at, the
   * next turn's expected growth (tokens) and the user of the turn before (`<channel>:<userId>`), whom its summary counts for.
   */
  idle?: { version: number; growthTokens: number; user?: string };
}

/** Queue names and prefix, shared by producers and workers. */
export interface QueueNames {
  /** BullMQ prefix. Default `{cgq}`. */
  queuePrefix: string;
  /** Default `turns`. */
  turnQueue: string;
  /** Default `outbound`. */
  outboundQueue: string;
  /** Shards of each queue, every one in its own hash slot (see {@link shardPrefixes}). Default 1. */
  queueShards: number;
}

/** Most queue shards a deployment may have. */
export const MAX_QUEUE_SHARDS = 256;

/** Resolves queue names; names must not contain `:`. @throws Error naming the bad option. */
export function resolveQueueNames(options: Partial<QueueNames> = {}): QueueNames {
  const names = {
    queuePrefix: options.queuePrefix ?? DEFAULT_QUEUE_PREFIX,
    turnQueue: options.turnQueue ?? DEFAULT_TURN_QUEUE,
    outboundQueue: options.outboundQueue ?? DEFAULT_OUTBOUND_QUEUE,
    queueShards: options.queueShards ?? 1,
  };
  if (!Number.isInteger(names.queueShards) || names.queueShards < 1 || names.queueShards > MAX_QUEUE_SHARDS) {
    throw new Error(`\`queueShards\` must be an integer in [1, ${MAX_QUEUE_SHARDS}] (got ${names.queueShards})`);
  }
  for (const field of ['turnQueue', 'outboundQueue'] as const) {
    if (names[field].includes(':')) throw new Error(`\`${field}\` must not contain ':' (got ${names[field]})`);
  }
  return names;
}

/**
 * BullMQ prefix of shard `shard` of `shards`: with one shard the prefix itself (today's keys);
 * with more, the shard number and a salt join the hash tag (`{cgq}` → `{cgq-3-<salt>}`, see
 * {@link shardTag}: the shards spread evenly over the slot space), or the shard number is appended
 * when the prefix has no hash tag (`cgq` → `cgq-3`; one Redis only).
 */
export function shardPrefix(queuePrefix: string, shard: number, shards: number): string {
  if (shards === 1) return queuePrefix;
  const open = queuePrefix.indexOf('{');
  const close = open < 0 ? -1 : queuePrefix.indexOf('}', open + 1);
  if (close > open + 1) return `${queuePrefix.slice(0, open + 1)}${cachedShardTag(queuePrefix.slice(open + 1, close), shard, shards)}${queuePrefix.slice(close)}`;
  return `${queuePrefix}-${shard}`;
}

/** The BullMQ prefixes of every shard, shard 0 first. */
export function shardPrefixes(names: Pick<QueueNames, 'queuePrefix' | 'queueShards'>): string[] {
  return Array.from({ length: names.queueShards }, (_, i) => shardPrefix(names.queuePrefix, i, names.queueShards));
}

/** The prefix of the shard that holds session `sessionId`'s turn jobs (BullMQ) and its replies (the outbound stream). */
export function sessionShardPrefix(names: Pick<QueueNames, 'queuePrefix' | 'queueShards'>, sessionId: string): string {
  return shardPrefix(names.queuePrefix, shardOf(sessionId, names.queueShards), names.queueShards);
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

// Searching a shard's tag costs up to a few hundred CRC16s; remembered here, outside the pure core:
// a few hundred entries per deployment at most (shards × prefixes in use).
const shardTags = new Map<string, string>();

function cachedShardTag(base: string, shard: number, shards: number): string {
  const key = `${base}\n${shard}\n${shards}`;
  let tag = shardTags.get(key);
  if (tag === undefined) {
    tag = shardTag(base, shard, shards);
    shardTags.set(key, tag);
  }
  return tag;
}
