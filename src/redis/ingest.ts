/**
 * The one way into a session's inbox: {@link acceptInbound}, over the ingest script
 * (scripts/ingest-inbound-7.lua). Every caller uses it: the gateway's ingest pipeline, `/retry`,
 * the turn producer's `submitInbound`, on one Redis node or on a Cluster.
 */
import { Cluster } from 'ioredis';
import { toWellFormedInbound, type InboundMessage } from '../core/inbound.js';
import type { RedisClient } from './client.js';
import { HYGIENE_META_FIELDS, hygieneFiguresOf, type HygieneFigures } from './hygiene-figures.js';
import { pendingIndexKey, seenKey, sessionKeys } from './keys.js';
import { runScriptWithOptions } from './scripts.js';

/** Default of how long a message id is remembered to drop platform re-deliveries, in seconds (a day). */
export const DEFAULT_SEEN_TTL_SECONDS = 86_400;

/** The rate limit the accept applies: every counter key counts the message; over `limit` in any refuses it. */
export interface IngestRateLimit {
  /** One or two window counters (the sender's, then the sender address's). */
  keys: readonly string[];
  limit: number;
  /** Expiry of a window counter, seconds. */
  ttlSeconds: number;
}

/** Input of {@link acceptInbound}. */
export interface AcceptInput {
  sessionId: string;
  /** The message as it is stored in the inbox (a lone surrogate in it is stored as U+FFFD). */
  message: InboundMessage;
  /** Session key prefix. */
  keyPrefix: string;
  /** How long the message id is remembered, in seconds. Default {@link DEFAULT_SEEN_TTL_SECONDS}. */
  dedupeTtlSeconds?: number;
  /** When, ms since epoch (the pending index's score). */
  nowMs: number;
  /** Counted before the accept, refused when over. Default null: not limited (or counted by the caller). */
  rate?: IngestRateLimit | null;
  /** The message is over the size limit: refused after it was counted. Default false. */
  tooLong?: boolean;
}

/** What the accept did. */
export type AcceptResult =
  | { kind: 'duplicate'; inboxLength: number }
  | { kind: 'rate_limited' }
  | { kind: 'too_long' }
  | { kind: 'accepted'; figures: HygieneFigures };

/**
 * Durably accepts an inbound message into its session's inbox: drops a re-delivery, counts the
 * rate limit, gives the size verdict, marks the session pending (the sweeper enqueues its turn if
 * the caller dies first), marks the message seen and appends it — and returns the hygiene
 * pre-check's figures. The caller then enqueues the session's turn.
 *
 * On one node: one script, one round trip. On a Cluster the rate counters (keyed by sender, so one
 * limit spans its chats) and the pending index live in other slots: the seen check, then the
 * counters and the pending mark together, then the session's script — same order and meaning.
 * @throws when Redis fails: nothing, or only rate counters, were written; the message is not accepted.
 */
export async function acceptInbound(redis: RedisClient, input: AcceptInput): Promise<AcceptResult> {
  if (!(redis instanceof Cluster)) return runIngestScript(redis, input, true);
  const keys = sessionKeys(input.sessionId, input.keyPrefix);
  if ((await redis.exists(seenKey(input.sessionId, input.message.id, input.keyPrefix))) === 1) return { kind: 'duplicate', inboxLength: await redis.llen(keys.inbox) };
  const rate = input.rate ?? null;
  // Marked pending alongside the count: a refused message leaves an empty-inbox mark the sweeper drops.
  const [counts] = await Promise.all([
    Promise.all((rate?.keys ?? []).map((key) => countInWindow(redis, key, rate!.ttlSeconds))),
    input.tooLong ? null : redis.zadd(pendingIndexKey(input.keyPrefix), input.nowMs, input.sessionId),
  ]);
  if (rate && counts.some((count) => count > rate.limit)) return { kind: 'rate_limited' };
  if (input.tooLong) return { kind: 'too_long' };
  return runIngestScript(redis, { ...input, rate: null }, false);
}

/** Counts one message in a rate-limit window key that expires after `ttlSeconds`. @returns the count. */
export async function countInWindow(redis: RedisClient, key: string, ttlSeconds: number): Promise<number> {
  return Number(await runScriptWithOptions(redis, 'countInWindow', [key], { ttlSeconds }));
}

/**
 * Runs the ingest script. Keys outside the session's slot (pending index, rate counters) are
 * passed only when used; the seen key stands in for them otherwise, so a cluster run touches one slot.
 */
async function runIngestScript(redis: RedisClient, input: AcceptInput, markPending: boolean): Promise<AcceptResult> {
  const keys = sessionKeys(input.sessionId, input.keyPrefix);
  const seen = seenKey(input.sessionId, input.message.id, input.keyPrefix);
  const counters = input.rate?.keys ?? [];
  if (counters.length > 2) throw new Error(`acceptInbound takes at most two rate counters (got ${counters.length})`);
  const scriptKeys = [seen, keys.inbox, markPending ? pendingIndexKey(input.keyPrefix) : seen, keys.meta, keys.history, counters[0] ?? seen, counters[1] ?? seen];
  const options = {
    ttlSeconds: input.dedupeTtlSeconds ?? DEFAULT_SEEN_TTL_SECONDS, seenValue: String(input.message.receivedAt), nowMs: input.nowMs,
    counters: counters.length, limit: input.rate?.limit, rateTtlSeconds: input.rate?.ttlSeconds,
    tooLong: input.tooLong === true, pending: markPending, fields: HYGIENE_META_FIELDS,
  };
  const reply = (await runScriptWithOptions(redis, 'ingestInbound', scriptKeys, options, [wellFormedJson(input.message), input.sessionId])) as Array<number | string | null>;
  switch (Number(reply[0])) {
    case 0: return { kind: 'duplicate', inboxLength: Number(reply[1]) };
    case 1: return { kind: 'accepted', figures: hygieneFiguresOf(reply.slice(3) as Array<string | null>, Number(reply[1]), Number(reply[2])) };
    case 2: return { kind: 'rate_limited' };
    case 3: return { kind: 'too_long' };
    default: throw new Error(`acceptInbound: unexpected reply ${JSON.stringify(reply)}`);
  }
}

/**
 * `message` as JSON with every string well-formed (Redis's cjson rejects a lone surrogate, and the
 * claim would dead-letter it). The channels' messages are well-formed already (their adapters made
 * them so); JSON.stringify writes a lone surrogate as a `\udXXX` escape, so only a message with one
 * (a library caller's) is repaired here.
 */
function wellFormedJson(message: InboundMessage): string {
  const json = JSON.stringify(message);
  return /\\u[dD][89a-fA-F]/.test(json) ? JSON.stringify(toWellFormedInbound(message)) : json;
}
