import type { OutboundMessage } from '../core/inbound.js';
import type { OutboundEntry } from './outbound-shard.js';

/** A stream entry the consumer can deliver: the reply, its attempts so far and when it was first enqueued. */
export interface ParsedEntry {
  replyId: string;
  message: OutboundMessage;
  /** Delivery attempts spent so far (rate limits and order waits spend none). */
  attempts: number;
  enqueuedAtMs: number;
}

/** An entry that cannot be delivered, and why (it is failed for good, never retried). */
export interface MalformedEntry {
  replyId: string;
  error: string;
  /** The session its reply names, when it names one (its place in that session's order is given up). */
  sessionId?: string;
}

const REQUIRED = ['id', 'sessionId', 'channel', 'chatId', 'text', 'kind'] as const;

/**
 * Reads a stream entry: its reply must be JSON with string `id`, `sessionId`, `channel`, `chatId`,
 * `text` and a `kind` of `reply` or `notice`. Never throws: a bad entry is returned as {@link MalformedEntry}.
 */
export function parseOutboundEntry(entry: OutboundEntry): ParsedEntry | MalformedEntry {
  const replyId = entry.fields.id || entry.entryId;
  const raw = entry.fields.data;
  if (raw === undefined) return { replyId, error: 'malformed outbound entry: it has no reply (field `data`)' };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { replyId, error: 'malformed outbound entry: its reply is not JSON' };
  }
  if (typeof value !== 'object' || value === null) return { replyId, error: 'malformed outbound entry: its reply is not a JSON object' };
  const record = value as Record<string, unknown>;
  const session = typeof record.sessionId === 'string' ? { sessionId: record.sessionId } : {};
  const missing = REQUIRED.filter((field) => typeof record[field] !== 'string');
  if (missing.length > 0) return { replyId, ...session, error: `malformed outbound entry: its reply lacks ${missing.map((f) => `\`${f}\``).join(', ')} (strings)` };
  if (record.kind !== 'reply' && record.kind !== 'notice') return { replyId, ...session, error: `malformed outbound entry: kind must be reply or notice (got ${String(record.kind)})` };
  return {
    replyId, message: record as unknown as OutboundMessage,
    attempts: toCount(entry.fields.attempts), enqueuedAtMs: toCount(entry.fields.enq) || Date.now(),
  };
}

/** Whether {@link parseOutboundEntry} found the entry unusable. */
export function isMalformed(entry: ParsedEntry | MalformedEntry): entry is MalformedEntry {
  return 'error' in entry;
}

function toCount(raw: string | undefined): number {
  const n = Number(raw ?? 0);
  return Number.isFinite(n) && n >= 0 ? Math.floor(n) : 0;
}
