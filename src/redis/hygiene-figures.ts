/**
 * What the gateway's hygiene pre-check reads of a session: a few meta fields, the history's length
 * and the inbox's size. Read on their own by {@link readHygieneFigures}, or returned by the ingest
 * script with the accept (src/redis/ingest.ts), so the check costs no round trip of its own.
 */
import type { RedisClient } from './client.js';
import type { SessionKeys } from './keys.js';
import { runScript } from './scripts.js';

/** The meta fields the hygiene pre-check reads (and the chat's settings: the accept's busy mode reads them). */
export const HYGIENE_META_FIELDS = ['lastPromptTokens', 'appendedTokensSince', 'projectionTokens', 'overheadTokens', 'limits', 'chatSettings'] as const;

/** One of {@link HYGIENE_META_FIELDS}. */
export type HygieneMetaField = (typeof HYGIENE_META_FIELDS)[number];

/** A session's figures for the hygiene pre-check, as Redis holds them. */
export interface HygieneFigures {
  /** The meta fields present (raw hash values). */
  meta: Partial<Record<HygieneMetaField, string>>;
  /** Entries in the projection (history list length). */
  historyLength: number;
  /** Summed byte length of the inbox's items. */
  inboxBytes: number;
}

/** The figures from raw replies: meta values in {@link HYGIENE_META_FIELDS} order (null when absent). */
export function hygieneFiguresOf(values: ReadonlyArray<string | null | undefined>, historyLength: number, inboxBytes: number): HygieneFigures {
  const meta: Partial<Record<HygieneMetaField, string>> = {};
  HYGIENE_META_FIELDS.forEach((field, k) => {
    const value = values[k];
    if (value != null) meta[field] = value;
  });
  return { meta, historyLength, inboxBytes };
}

/** Reads a session's hygiene figures (one round trip, three commands). */
export async function readHygieneFigures(redis: RedisClient, keys: SessionKeys): Promise<HygieneFigures> {
  const [values, historyLength, inboxBytes] = await Promise.all([
    redis.hmget(keys.meta, ...HYGIENE_META_FIELDS),
    redis.llen(keys.history),
    runScript(redis, 'inboxBytes', [keys.inbox]),
  ]);
  return hygieneFiguresOf(values, historyLength, Number(inboxBytes));
}
