/**
 * What holds each Redis key of bench/storage: its name says which part of chatgate wrote it
 * (src/redis/keys.ts builds them; BullMQ's under the queue prefix). Sizes are `MEMORY USAGE`
 * (SAMPLES 0: every element counted), so they include Redis's own per-key overhead.
 */
import type { Redis } from 'ioredis';

/** The parts a key can belong to, in report order. */
export const PARTS = [
  'transcript', 'projection (history)', 'session meta', 'usage ledger', 'inbox, lease, steps (transient)', 'seen markers',
  'completed turn jobs', 'outbound reply markers', 'outbound streams (waiting, delayed, failed)', 'failed turn jobs', 'dead letters', 'delivery ledger', 'web chat reply streams',
  'stream view records', 'attachments', 'outbound order lists', 'queue bookkeeping (events, ids, sets)', 'indexes (sessions, pending)', 'rate-limit windows', 'other',
] as const;

/** One part of chatgate's state. */
export type Part = (typeof PARTS)[number];

/** Bytes and keys per part. */
export type Census = Map<Part, { keys: number; bytes: number }>;

const SESSION_PARTS: Record<string, Part> = {
  transcript: 'transcript', history: 'projection (history)', meta: 'session meta', usage: 'usage ledger', failed: 'dead letters',
  inbox: 'inbox, lease, steps (transient)', processing: 'inbox, lease, steps (transient)', lease: 'inbox, lease, steps (transient)',
  steps: 'inbox, lease, steps (transient)', outbox: 'inbox, lease, steps (transient)', stop: 'inbox, lease, steps (transient)', notes: 'session meta',
};

/** The part key `key` belongs to, for session keys under `keyPrefix` and BullMQ keys under `queuePrefix`. */
export function partOf(key: string, keyPrefix: string, queuePrefix: string, failedJobIds: ReadonlySet<string>): Part {
  if (key.startsWith(queuePrefix)) return queuePart(key.slice(queuePrefix.length + 1), failedJobIds);
  if (!key.startsWith(keyPrefix)) return 'other';
  const rest = key.slice(keyPrefix.length);
  if (rest === 'sessions' || rest === 'pending') return 'indexes (sessions, pending)';
  if (rest.startsWith('rate:')) return 'rate-limit windows';
  if (rest.startsWith('web:')) return 'web chat reply streams';
  const session = /^\{[^}]*\}:(.+)$/.exec(rest)?.[1];
  if (session === undefined) return 'other';
  if (session.startsWith('seen:')) return 'seen markers';
  if (session.startsWith('delivery:')) return 'delivery ledger';
  if (session.startsWith('partial-view:')) return 'stream view records';
  if (session.startsWith('att:')) return 'attachments';
  return SESSION_PARTS[session] ?? 'other';
}

/** Every key under the two prefixes, sized and sorted into parts. */
export async function takeCensus(redis: Redis, keyPrefix: string, queuePrefix: string): Promise<Census> {
  const failed = new Set(await redis.zrange(`${queuePrefix}:turns:failed`, '0', '-1'));
  const census: Census = new Map(PARTS.map((part) => [part, { keys: 0, bytes: 0 }]));
  for (const pattern of [`${keyPrefix}*`, `${queuePrefix}*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      const pipeline = redis.pipeline();
      for (const key of keys) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
      const sizes = (await pipeline.exec()) ?? [];
      keys.forEach((key, i) => {
        const entry = census.get(partOf(key, keyPrefix, queuePrefix, failed))!;
        entry.keys++;
        entry.bytes += Number(sizes[i]?.[1] ?? 0);
      });
    } while (cursor !== '0');
  }
  return census;
}

/** `after − before`, part by part. */
export function difference(after: Census, before: Census): Census {
  return new Map(PARTS.map((part) => {
    const a = after.get(part)!;
    const b = before.get(part)!;
    return [part, { keys: a.keys - b.keys, bytes: a.bytes - b.bytes }];
  }));
}

function queuePart(rest: string, failedJobIds: ReadonlySet<string>): Part {
  const [queue, id, ...more] = rest.split(':');
  if (queue === 'outbound' && id === 'chatgate-pending') return 'outbound order lists';
  // chatgate's outbound transport (src/redis/keys.ts outboundShardKeys): `stream`, `stream-delayed…`, `stream-id:<reply>`.
  if (queue === 'outbound' && id === 'stream-id') return 'outbound reply markers';
  if (queue === 'outbound' && id?.startsWith('stream')) return 'outbound streams (waiting, delayed, failed)';
  const isJob = id !== undefined && more.length === 0 && !QUEUE_KEYS.has(id);
  if (!isJob) return 'queue bookkeeping (events, ids, sets)';
  return failedJobIds.has(id) ? 'failed turn jobs' : 'completed turn jobs';
}

/** BullMQ's per-queue keys (not jobs). */
const QUEUE_KEYS = new Set(['events', 'id', 'meta', 'completed', 'failed', 'wait', 'active', 'delayed', 'prioritized', 'paused', 'stalled', 'stalled-check', 'marker', 'pc', 'limiter', 'repeat', 'waiting-children', 'de', 'metrics']);
