import type { CompactionOutcome } from '../core/compaction/compaction-types.js';
import type { ChatMessage } from '../core/messages.js';
import type { CompactionLayer } from '../core/session-figures.js';
import type { SessionDecision } from '../core/session-view.js';
import { messageText } from '../core/messages.js';
import type { RedisClient } from './client.js';
import type { SessionKeys } from './keys.js';

/**
 * Transcript entries kept per session by default (`CHATGATE_TRANSCRIPT_MAXLEN` reads this): the
 * newest 10,000 (about 4 MB at 385 B an entry; 5,000 exchanges), the oldest trimmed as new ones come.
 */
export const DEFAULT_TRANSCRIPT_RETENTION = 10_000;

/** A message as recorded in the transcript. */
export interface TranscriptMessage {
  type: 'message';
  message: ChatMessage;
  tokens: number;
  /** The inbound message id, for user messages that came from a channel. */
  inboundId?: string;
  /** On a model's answer: the prompt tokens the provider billed for the call that produced it. */
  promptTokens?: number;
  /** On a model's final answer: the id of the outbound reply that carries it (`replyJobId(ids, 'reply')`). */
  replyId?: string;
  /** On a user message that brought files: their kinds and names (the message holds their text or references). */
  attachments?: Array<{ kind: string; fileName: string }>;
  /** On a user message that brought files: the user's own words, without the files' text. */
  userText?: string;
  atMs: number;
}

/** A compaction event as recorded in the transcript. */
export interface TranscriptCompaction {
  type: 'compaction';
  layer: CompactionLayer;
  outcome: CompactionOutcome;
  tokensBefore: number;
  tokensAfter: number;
  /** Size of the whole request (overhead included) that triggered it. */
  requestTokens?: number;
  model?: string;
  durationMs: number;
  reason?: string;
  atMs: number;
}

/** A reset as recorded in the transcript: the projection was emptied, the transcript keeps everything. */
export interface TranscriptReset {
  type: 'reset';
  /** Messages that left the projection. */
  removedMessages: number;
  /** Projection tokens before the reset. */
  tokensBefore: number;
  atMs: number;
}

/** A decision on an asked tool call as recorded in the transcript (src/approvals/scripts/decide-approval-3.lua writes it). */
export interface TranscriptApproval extends SessionDecision {
  type: 'approval';
  callId: string;
}

/** One transcript entry. */
export type TranscriptEntry = TranscriptMessage | TranscriptCompaction | TranscriptReset | TranscriptApproval;

/** A transcript entry with its stream id. */
export type StoredTranscriptEntry = TranscriptEntry & { id: string };

/** Options of {@link searchTranscript}. */
export interface TranscriptSearchOptions {
  /** Maximum hits, newest first. Default 10. */
  limit?: number;
  /** Stream entries read per round trip. Default 500. */
  batchSize?: number;
}

/** Reads transcript entries from `start` to `end` (stream ids, default all), oldest first. */
export async function readTranscript(redis: RedisClient, keys: SessionKeys, start = '-', end = '+', count?: number): Promise<StoredTranscriptEntry[]> {
  const raw = count === undefined
    ? await redis.xrange(keys.transcript, start, end)
    : await redis.xrange(keys.transcript, start, end, 'COUNT', count);
  return raw.map(([id, fields]) => toEntry(id, fields));
}

/**
 * Reads up to `count` transcript entries older than the stream id `before` (exclusive; absent = from
 * the newest), newest first (XREVRANGE): what a history view pages backwards with.
 */
export async function readTranscriptBefore(redis: RedisClient, keys: SessionKeys, before: string | undefined, count: number): Promise<StoredTranscriptEntry[]> {
  const raw = await redis.xrevrange(keys.transcript, before === undefined ? '+' : `(${before}`, '-', 'COUNT', count);
  return raw.map(([id, fields]) => toEntry(id, fields));
}

/**
 * Finds transcript messages whose text contains `query` (case-insensitive), newest first,
 * walking the stream backwards in batches (XREVRANGE).
 */
export async function searchTranscript(redis: RedisClient, keys: SessionKeys, query: string, options: TranscriptSearchOptions = {}): Promise<StoredTranscriptEntry[]> {
  const limit = options.limit ?? 10;
  const batchSize = options.batchSize ?? 500;
  const needle = query.toLowerCase();
  const hits: StoredTranscriptEntry[] = [];
  let end = '+';
  for (;;) {
    const raw = await redis.xrevrange(keys.transcript, end, '-', 'COUNT', batchSize);
    for (const [id, fields] of raw) {
      const entry = toEntry(id, fields);
      if (entry.type === 'message' && entryText(entry).toLowerCase().includes(needle)) hits.push(entry);
      if (hits.length >= limit) return hits;
    }
    if (raw.length < batchSize) return hits;
    end = `(${raw[raw.length - 1]![0]}`;
  }
}

/** Searchable text of a transcript message: content plus tool-call names and arguments. */
export function entryText(entry: TranscriptMessage): string {
  const message = entry.message;
  let text = messageText(message);
  if (message.role === 'assistant' && message.tool_calls) {
    for (const call of message.tool_calls) text += `\n${call.function.name} ${call.function.arguments}`;
  }
  return text;
}

function toEntry(id: string, fields: string[]): StoredTranscriptEntry {
  const index = fields.indexOf('data');
  return { ...(JSON.parse(fields[index + 1]!) as TranscriptEntry), id };
}
