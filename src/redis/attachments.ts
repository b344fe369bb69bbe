/**
 * The bytes of inbound attachments, where every worker can read them: one Redis string per file,
 * written with a TTL in one command (SET … EX), so nothing stored can outlive it — not even the
 * files of a message whose accept failed after they were written. What grows: at most
 * (messages with files per TTL) × (their size, ≤ the limit); see docs/operating.md.
 */
import { createHash } from 'node:crypto';
import type { StoredAttachment } from '../core/inbound.js';
import type { RedisClient } from './client.js';
import { attachmentKey, DEFAULT_KEY_PREFIX } from './keys.js';

/** Where attachments are kept. */
export interface AttachmentStoreOptions {
  keyPrefix?: string;
  /** How long the bytes stay, seconds. */
  ttlSeconds: number;
  /** Clock, ms since epoch. Default `Date.now`. */
  now?: () => number;
}

/**
 * The id of attachment `index` of inbound message `messageId`: stable, so a platform re-delivery
 * overwrites the same key instead of adding one.
 */
export function attachmentIdOf(messageId: string, index: number): string {
  return `${createHash('sha256').update(messageId).digest('hex').slice(0, 24)}-${index}`;
}

/** Stores `bytes` under the session's attachment key `id` with the TTL. @returns the reference the inbox keeps. */
export async function storeAttachment(redis: RedisClient, sessionId: string, id: string, bytes: Buffer, options: AttachmentStoreOptions): Promise<StoredAttachment> {
  const now = options.now ?? Date.now;
  await redis.set(attachmentKey(sessionId, id, options.keyPrefix ?? DEFAULT_KEY_PREFIX), bytes, 'EX', options.ttlSeconds);
  return { id, bytes: bytes.length, expiresAtMs: now() + options.ttlSeconds * 1000 };
}

/** The bytes of a stored attachment, or null when they expired (or were never stored). */
export async function loadAttachment(redis: RedisClient, sessionId: string, id: string, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<Buffer | null> {
  return redis.getBuffer(attachmentKey(sessionId, id, keyPrefix));
}

/**
 * Whether the bytes of attachments `ids` are still stored, in one round trip: for each, where they
 * are (`stored`, with the time left of their TTL) or null when they expired. Nothing is read.
 */
export async function storedAttachments(redis: RedisClient, sessionId: string, ids: readonly string[], options: { keyPrefix?: string; now?: () => number } = {}): Promise<Array<StoredAttachment | null>> {
  if (ids.length === 0) return [];
  const prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.pttl(attachmentKey(sessionId, id, prefix)).strlen(attachmentKey(sessionId, id, prefix));
  const replies = (await pipeline.exec()) ?? [];
  const now = (options.now ?? Date.now)();
  return ids.map((id, k) => {
    const [ttlErr, ttl] = replies[2 * k] ?? [];
    const [lenErr, bytes] = replies[2 * k + 1] ?? [];
    if (ttlErr || lenErr) throw ttlErr ?? lenErr;
    // -2: no such key (expired); -1: no TTL (never written by storeAttachment, kept as it is).
    if (typeof ttl !== 'number' || ttl === -2) return null;
    return { id, bytes: Number(bytes), expiresAtMs: ttl === -1 ? Number.MAX_SAFE_INTEGER : now + ttl };
  });
}
