/**
 * The ingest script's caller (scripts/ingest-inbound-7.lua): dedupe, rate limit, size verdict,
 * pending mark, accept and the hygiene pre-check's figures in one round trip.
 */
import { toWellFormedInbound, type InboundMessage } from '../core/inbound.js';
import type { RedisClient } from './client.js';
import { HYGIENE_META_FIELDS, hygieneFiguresOf, type HygieneFigures } from './hygiene-figures.js';
import { pendingIndexKey, seenKey, sessionKeys } from './keys.js';
import { runScriptWithOptions } from './scripts.js';

/** The rate limit the script applies: every counter key counts the message; over `limit` in any refuses it. */
export interface IngestRateLimit {
  /** One or two window counters (the sender's, then the sender address's). */
  keys: readonly string[];
  limit: number;
  /** Expiry of a window counter, seconds. */
  ttlSeconds: number;
}

/** Input of {@link ingestInbound}. */
export interface IngestScriptInput {
  sessionId: string;
  /** The message as it is stored in the inbox. */
  message: InboundMessage;
  keyPrefix: string;
  /** How long the message id is remembered, in seconds. */
  dedupeTtlSeconds: number;
  /** When, ms since epoch (the pending index's score). */
  nowMs: number;
  /** Null: not limited here (unlimited, or counted by the caller, on a cluster). */
  rate: IngestRateLimit | null;
  /** The message is over the size limit: refused after it was counted. */
  tooLong: boolean;
  /** Whether the script marks the session in the pending index (false on a cluster: its own slot; the caller did). */
  markPending: boolean;
}

/** What the script did. */
export type IngestScriptResult =
  | { kind: 'duplicate'; inboxLength: number }
  | { kind: 'rate_limited' }
  | { kind: 'too_long' }
  | { kind: 'accepted'; figures: HygieneFigures };

/**
 * Runs the ingest script. Keys outside the session's slot (pending index, rate counters) are
 * passed only when used; the seen key stands in for them otherwise, so a cluster run touches one slot.
 * @throws when Redis fails: nothing, or only rate counters, were written; the message is not accepted.
 */
export async function ingestInbound(redis: RedisClient, input: IngestScriptInput): Promise<IngestScriptResult> {
  const keys = sessionKeys(input.sessionId, input.keyPrefix);
  const seen = seenKey(input.sessionId, input.message.id, input.keyPrefix);
  const counters = input.rate?.keys ?? [];
  if (counters.length > 2) throw new Error(`ingestInbound takes at most two rate counters (got ${counters.length})`);
  const scriptKeys = [seen, keys.inbox, input.markPending ? pendingIndexKey(input.keyPrefix) : seen, keys.meta, keys.history, counters[0] ?? seen, counters[1] ?? seen];
  const options = {
    ttlSeconds: input.dedupeTtlSeconds, seenValue: String(input.message.receivedAt), nowMs: input.nowMs,
    counters: counters.length, limit: input.rate?.limit, rateTtlSeconds: input.rate?.ttlSeconds,
    tooLong: input.tooLong, pending: input.markPending, fields: HYGIENE_META_FIELDS,
  };
  const reply = (await runScriptWithOptions(redis, 'ingestInbound', scriptKeys, options, [wellFormedJson(input.message), input.sessionId])) as Array<number | string | null>;
  switch (Number(reply[0])) {
    case 0: return { kind: 'duplicate', inboxLength: Number(reply[1]) };
    case 1: return { kind: 'accepted', figures: hygieneFiguresOf(reply.slice(3) as Array<string | null>, Number(reply[1]), Number(reply[2])) };
    case 2: return { kind: 'rate_limited' };
    case 3: return { kind: 'too_long' };
    default: throw new Error(`ingestInbound: unexpected reply ${JSON.stringify(reply)}`);
  }
}

/**
 * `message` as JSON with every string well-formed (Redis's cjson rejects a lone surrogate). JSON.stringify
 * writes a lone surrogate as a `\udXXX` escape: only when one may be there is the message repaired first.
 */
function wellFormedJson(message: InboundMessage): string {
  const json = JSON.stringify(message);
  return /\\u[dD][89a-fA-F]/.test(json) ? JSON.stringify(toWellFormedInbound(message)) : json;
}
