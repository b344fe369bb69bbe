/**
 * The Redis-backed web chat reply store: one stream per conversation (`XADD … MAXLEN ~ <buffer>`,
 * TTL refreshed on every write), whose stream ids are the clients' cursors. Stream ids increase
 * across processes and restarts, so any gateway can deliver a reply, every gateway's long polls and
 * SSE streams see it, and a cursor survives a restart. Waits are `XREAD BLOCK` on a connection
 * duplicated for the wait (a blocked connection serves nothing else; named `<prefix>web-wait` in
 * CLIENT LIST) and closed after it. Typing
 * hints stay in the process (every gateway receives the workers' turn signals and types on its own).
 */
import { duplicateRedis, type RedisClient } from '../../src/redis/client.js';
import { DEFAULT_KEY_PREFIX, webConversationKey } from '../../src/redis/keys.js';
import { runScriptWithOptions } from '../../src/redis/scripts.js';
import type { WebReply } from './conversations.js';
import type { ReplyHint, ReplyPage, ReplyStore } from './reply-store.js';

/** What {@link createRedisReplyStore} needs. */
export interface RedisReplyStoreDeps {
  redis: RedisClient;
}

/** Options of {@link createRedisReplyStore}. */
export interface RedisReplyStoreOptions {
  /** Key prefix (the gateway's). Default `cg:`. */
  keyPrefix?: string;
  /** Replies kept per conversation (approximately: `MAXLEN ~`). Default 200. */
  maxRepliesPerConversation?: number;
  /** Lifetime of a conversation's stream after its last reply, in seconds. Default 7 days. */
  ttlSeconds?: number;
}

const DEFAULTS = { keyPrefix: DEFAULT_KEY_PREFIX, maxRepliesPerConversation: 200, ttlSeconds: 7 * 24 * 3600 } satisfies Required<RedisReplyStoreOptions>;

const STREAM_ID_RE = /^\d{1,20}-\d{1,20}$/;

/** A stream id cursor as is; anything else (an in-memory `<epoch>:<seq>`, nothing) = the whole buffer. */
export function streamCursor(after: string | undefined): string {
  const value = after?.trim() ?? '';
  return STREAM_ID_RE.test(value) ? value : '0-0';
}

type StreamEntries = Array<[string, string[]]>;
type XReadReply = Array<[string, StreamEntries]> | null;

/** Creates the Redis reply store; see the module comment. */
export function createRedisReplyStore(deps: RedisReplyStoreDeps, options: RedisReplyStoreOptions = {}): ReplyStore {
  const resolved = { ...DEFAULTS, ...options };
  const listeners = new Map<string, Set<(hint: ReplyHint) => void>>();
  const waits = new Set<() => void>();
  const key = (conversationId: string): string => webConversationKey(conversationId, resolved.keyPrefix);
  const count = resolved.maxRepliesPerConversation;

  const hint = (conversationId: string, value: ReplyHint): void => {
    for (const listener of [...(listeners.get(conversationId) ?? [])]) listener(value);
  };

  /** `XREAD BLOCK` on its own connection; `[]` on timeout, abort or close. */
  const blockingRead = async (streamKey: string, from: string, timeoutMs: number, signal?: AbortSignal): Promise<XReadReply> => {
    const connection = duplicateRedis(deps.redis, { maxRetriesPerRequest: 1, connectionName: `${resolved.keyPrefix}web-wait` });
    let ended = false;
    const end = (): void => {
      ended = true;
      connection.disconnect();
    };
    waits.add(end);
    signal?.addEventListener('abort', end);
    try {
      return (await connection.xread('COUNT', count, 'BLOCK', timeoutMs, 'STREAMS', streamKey, from)) as XReadReply;
    } catch (err) {
      if (ended) return null;
      throw err;
    } finally {
      signal?.removeEventListener('abort', end);
      waits.delete(end);
      if (!ended) connection.disconnect();
    }
  };

  return {
    async append(conversationId, text, format, deliveryId) {
      const at = Date.now();
      // One script: the append is its own delivery record (see append-web-reply-1.lua).
      const options = { maxLen: count, ttlSeconds: resolved.ttlSeconds, atMs: at, ...(deliveryId ? { deliveryId } : {}) };
      const [id, appended] = (await runScriptWithOptions(deps.redis, 'appendWebReply', [key(conversationId)], options, [text, format])) as [string, number];
      const shownAt = appended === 1 ? String(at) : (id.split('-')[0] ?? String(at));
      return toReply(conversationId, [String(id), ['text', text, 'format', format, 'at', shownAt]]);
    },
    async read(conversationId, after, options): Promise<ReplyPage> {
      const streamKey = key(conversationId);
      const from = streamCursor(after);
      let result = (await deps.redis.xread('COUNT', count, 'STREAMS', streamKey, from)) as XReadReply;
      if (!result && options.timeoutMs > 0 && !options.signal?.aborted) result = await blockingRead(streamKey, from, options.timeoutMs, options.signal);
      const replies = (result?.[0]?.[1] ?? []).map((entry) => toReply(conversationId, entry));
      return { replies, next: replies.at(-1)?.cursor ?? from };
    },
    typing: (conversationId) => hint(conversationId, { type: 'typing' }),
    listen(conversationId, listener) {
      let set = listeners.get(conversationId);
      if (!set) listeners.set(conversationId, (set = new Set()));
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(conversationId) === set) listeners.delete(conversationId);
      };
    },
    closeAll() {
      for (const end of [...waits]) end();
      for (const conversationId of [...listeners.keys()]) hint(conversationId, { type: 'closed' });
    },
  };
}

/** A stream entry `[id, [field, value, …]]` as a reply. */
function toReply(conversationId: string, [id, fields]: [string, string[]]): WebReply {
  const value = (name: string): string | undefined => {
    for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
    return undefined;
  };
  const at = Number(value('at'));
  return {
    id: `web:${conversationId}:${id}`,
    cursor: id,
    text: value('text') ?? '',
    format: value('format') === 'markdown' ? 'markdown' : 'text',
    at: Number.isFinite(at) ? at : Number(id.split('-')[0]),
  };
}
