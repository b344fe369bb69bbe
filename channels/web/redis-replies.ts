/**
 * The Redis-backed web chat reply store: one stream per conversation (`XADD … MAXLEN ~ <buffer>`,
 * TTL refreshed on every write), whose stream ids are the clients' cursors. Stream ids increase
 * across processes and restarts, so any gateway can deliver a reply, every gateway's long polls and
 * SSE streams see it, and a cursor survives a restart.
 *
 * Waiting readers share one connection per store: every append publishes the conversation id on
 * `<prefix>web-replies` inside its script (one round trip, never an append without its wake-up), with
 * the new entry itself after a new append, and one subscriber connection (named `<prefix>web-wait` in
 * CLIENT LIST) wakes the waiting reads of that conversation — 1,000 long polls cost one connection,
 * not 1,000. A read that read nothing after its cursor and then is woken with the entry appended
 * next answers it as it is, without reading the stream again (a repeated append, or a reconnect,
 * wakes without one: then it reads); a read whose cursor is the last entry the subscriber heard of
 * (it heard every append since) does not read before it waits either — a page that polls again
 * after each reply costs no stream read at all.
 * Typing hints stay in the process (every gateway receives the workers' turn signals and types on its own).
 */
import type { MessageChoice } from '../../src/core/inbound.js';
import type { RedisClient } from '../../src/redis/client.js';
import { DEFAULT_KEY_PREFIX, webConversationKey, webRepliesChannel } from '../../src/redis/keys.js';
import { runScriptWithOptions } from '../../src/redis/scripts.js';
import type { WebReply } from './conversations.js';
import { replyIdOf, type ReplyHint, type ReplyPage, type ReplyStore } from './reply-store.js';
import { ReplyWakeups, STREAM_ID_RE, type StreamEntry } from './reply-wakeups.js';

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

/** A stream id cursor as is; anything else (an in-memory `<epoch>:<seq>`, nothing) = the whole buffer. */
export function streamCursor(after: string | undefined): string {
  const value = after?.trim() ?? '';
  return STREAM_ID_RE.test(value) ? value : '0-0';
}

type XReadReply = Array<[string, StreamEntry[]]> | null;

/** Creates the Redis reply store; see the module comment. */
export function createRedisReplyStore(deps: RedisReplyStoreDeps, options: RedisReplyStoreOptions = {}): ReplyStore {
  const resolved = { ...DEFAULTS, ...options };
  const listeners = new Map<string, Set<(hint: ReplyHint) => void>>();
  const wakeups = new ReplyWakeups(deps.redis, webRepliesChannel(resolved.keyPrefix), `${resolved.keyPrefix}web-wait`);
  const key = (conversationId: string): string => webConversationKey(conversationId, resolved.keyPrefix);
  const count = resolved.maxRepliesPerConversation;
  const readNow = async (streamKey: string, from: string): Promise<XReadReply> => (await deps.redis.xread('COUNT', count, 'STREAMS', streamKey, from)) as XReadReply;

  /** Reads the stream, waiting for a wake-up until `deadline` while it has nothing after `from`. */
  const readOrWait = async (conversationId: string, streamKey: string, from: string, deadline: number, signal?: AbortSignal): Promise<XReadReply> => {
    for (;;) {
      // A wait is registered before the read that follows it: a reply appended in between wakes it.
      const waits = Date.now() < deadline && !signal?.aborted && !wakeups.closed;
      if (!waits) return readNow(streamKey, from);
      const wait = await wakeups.register(conversationId, deadline - Date.now(), signal);
      // The subscriber heard every append since the one at `from`: the stream has nothing after it.
      if (wakeups.lastAppended(conversationId) !== from) {
        let result: XReadReply;
        try {
          result = await readNow(streamKey, from);
        } catch (err) {
          wait.cancel();
          throw err;
        }
        if (result) {
          wait.cancel();
          return result;
        }
      }
      const woken = await wait.woken;
      if (!woken) return null;
      // The stream had nothing after `from` when read, so the entry appended next is the one to answer.
      if (woken.entry && isAfter(woken.entry[0], from)) return [[streamKey, [woken.entry]]];
    }
  };

  const hint = (conversationId: string, value: ReplyHint): void => {
    for (const listener of [...(listeners.get(conversationId) ?? [])]) listener(value);
  };

  return {
    appendsOncePerDeliveryId: true,
    async append(conversationId, text, format, extras = {}) {
      const { deliveryId, liveReplyId } = extras;
      const choices = extras.choices && extras.choices.length > 0 ? JSON.stringify(extras.choices) : undefined;
      const edits = extras.edits ? cursorOf(conversationId, extras.edits) : undefined;
      const at = Date.now();
      // One script: the append is its own delivery record and wakes the conversation's waiting readers on
      // every gateway (a retried delivery wakes them again) — see append-web-reply-1.lua.
      const wake = [webRepliesChannel(resolved.keyPrefix), conversationId];
      if (extras.edits && !edits) throw new Error(`web reply ${extras.edits} is not a reply of conversation ${conversationId}`);
      const optional = { ...(deliveryId ? { deliveryId } : {}), ...(liveReplyId ? { liveReplyId } : {}), ...(choices ? { choices } : {}), ...(edits ? { edits } : {}) };
      const options = { maxLen: count, ttlSeconds: resolved.ttlSeconds, atMs: at, wake, ...optional };
      const [id, appended] = (await runScriptWithOptions(deps.redis, 'appendWebReply', [key(conversationId)], options, [text, format])) as [string, number];
      const shownAt = appended === 1 ? String(at) : (id.split('-')[0] ?? String(at));
      const stored: string[] = [];
      for (const [name, value] of [['delivery', deliveryId], ['liveReply', liveReplyId], ['choices', choices], ['edits', edits]] as const) if (value !== undefined) stored.push(name, value);
      return toReply(conversationId, [String(id), ['text', text, 'format', format, 'at', shownAt, ...stored]]);
    },
    async find(conversationId, replyId) {
      const cursor = cursorOf(conversationId, replyId);
      if (!cursor) return undefined;
      const [entry] = (await deps.redis.xrange(key(conversationId), cursor, cursor)) as StreamEntry[];
      return entry ? toReply(conversationId, entry) : undefined;
    },
    async findDelivered(conversationId, deliveryId) {
      // Newest first, as far back as the stream keeps entries (the append script looks as far).
      const entries = (await deps.redis.xrevrange(key(conversationId), '+', '-', 'COUNT', count)) as StreamEntry[];
      const entry = entries.find(([, fields]) => fields.some((field, i) => i % 2 === 0 && field === 'delivery' && fields[i + 1] === deliveryId));
      return entry ? toReply(conversationId, entry) : undefined;
    },
    async read(conversationId, after, options): Promise<ReplyPage> {
      const streamKey = key(conversationId);
      const from = streamCursor(after);
      const result = await readOrWait(conversationId, streamKey, from, Date.now() + options.timeoutMs, options.signal);
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
      wakeups.close();
      for (const conversationId of [...listeners.keys()]) hint(conversationId, { type: 'closed' });
    },
    waiting: () => wakeups.waiting(),
  };
}

/** The stream id of reply `replyId` (`web:<conversationId>:<stream id>`), or undefined when it is not one of the conversation's. */
function cursorOf(conversationId: string, replyId: string): string | undefined {
  const prefix = `web:${conversationId}:`;
  const cursor = replyId.startsWith(prefix) ? replyId.slice(prefix.length) : '';
  return STREAM_ID_RE.test(cursor) ? cursor : undefined;
}

/** Whether stream id `id` comes after `cursor` (both `<ms>-<n>`). */
function isAfter(id: string, cursor: string): boolean {
  const [ms, n] = id.split('-').map(BigInt) as [bigint, bigint];
  const [cursorMs, cursorN] = cursor.split('-').map(BigInt) as [bigint, bigint];
  return ms > cursorMs || (ms === cursorMs && n > cursorN);
}

/** A stream entry `[id, [field, value, …]]` as a reply. */
function toReply(conversationId: string, [id, fields]: [string, string[]]): WebReply {
  const value = (name: string): string | undefined => {
    for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
    return undefined;
  };
  const at = Number(value('at'));
  const replyId = replyIdOf(value('delivery'));
  const liveReplyId = value('liveReply');
  const choices = toChoices(value('choices'));
  const edits = value('edits');
  return {
    id: `web:${conversationId}:${id}`,
    cursor: id,
    text: value('text') ?? '',
    format: value('format') === 'markdown' ? 'markdown' : 'text',
    at: Number.isFinite(at) ? at : Number(id.split('-')[0]),
    ...(replyId ? { replyId } : {}),
    ...(liveReplyId ? { liveReplyId } : {}),
    ...(choices ? { choices } : {}),
    ...(edits ? { edits: `web:${conversationId}:${edits}` } : {}),
  };
}

/** A stored `choices` field: a JSON array of `{ label, command }` strings; anything else is none. */
function toChoices(json: string | undefined): MessageChoice[] | undefined {
  if (!json) return undefined;
  try {
    const parsed = JSON.parse(json) as unknown;
    if (!Array.isArray(parsed)) return undefined;
    const choices = parsed.filter((c): c is MessageChoice => typeof c?.label === 'string' && typeof c?.command === 'string');
    return choices.length > 0 ? choices.map(({ label, command }) => ({ label, command })) : undefined;
  } catch {
    return undefined;
  }
}
