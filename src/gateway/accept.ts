import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/client.js';
import { ingestInbound, type IngestScriptInput, type IngestScriptResult } from '../redis/ingest.js';
import { pendingIndexKey, seenKey, sessionKeys } from '../redis/keys.js';
import { runScriptWithOptions } from '../redis/scripts.js';

/** Counts one message in a rate-limit window key that expires after `ttlSeconds`. @returns the count. */
export async function countInWindow(redis: RedisClient, key: string, ttlSeconds: number): Promise<number> {
  return Number(await runScriptWithOptions(redis, 'countInWindow', [key], { ttlSeconds }));
}

/**
 * Dedupe, rate limit, size verdict, pending mark and accept of one plain message (no command, no
 * files to fetch). On one Redis node: one script (src/redis/ingest.ts), one round trip. On a
 * Cluster the rate counters (per user, per address: keyed by sender, not by session, so one
 * sender's limit spans all its chats) and the pending index (one sorted set the sweeper scans)
 * live in other slots than the session: the seen check, then the counters and the pending mark
 * (together), then the session's script — three round trips, in the same order and meaning.
 */
export async function acceptPlain(redis: RedisClient, input: Omit<IngestScriptInput, 'markPending'>): Promise<IngestScriptResult> {
  if (!(redis instanceof Cluster)) return ingestInbound(redis, { ...input, markPending: true });
  const keys = sessionKeys(input.sessionId, input.keyPrefix);
  if ((await redis.exists(seenKey(input.sessionId, input.message.id, input.keyPrefix))) === 1) return { kind: 'duplicate', inboxLength: await redis.llen(keys.inbox) };
  const rate = input.rate;
  // Marked pending alongside the count: a refused message leaves an empty-inbox mark the sweeper drops.
  const [counts] = await Promise.all([
    Promise.all((rate?.keys ?? []).map((key) => countInWindow(redis, key, rate!.ttlSeconds))),
    input.tooLong ? null : redis.zadd(pendingIndexKey(input.keyPrefix), input.nowMs, input.sessionId),
  ]);
  if (rate && counts.some((count) => count > rate.limit)) return { kind: 'rate_limited' };
  if (input.tooLong) return { kind: 'too_long' };
  return ingestInbound(redis, { ...input, rate: null, markPending: false });
}
