/**
 * Partial replies through Redis (streaming): a worker publishes the text of the reply it is
 * writing on the pub/sub channel `<prefix>partials`; every gateway listens and shows the text in
 * the chat that owns it. Each update carries the whole text so far, so a gateway that joins late
 * (or missed one) is up to date with the next update; nothing is stored per update. Partials are hints, never state: the final reply
 * travels the outbound queue as always. The gateway records the chat message it shows a stream in
 * (`…:live-reply:<liveReplyId>`), so the final reply can take that message over once, whichever
 * gateway delivers it.
 */
import type { ChannelName } from '../core/inbound.js';
import type { RedisClient } from '../redis/client.js';
import { DEFAULT_KEY_PREFIX, liveRepliesChannel, liveReplyRecordKey } from '../redis/keys.js';
import { defineTopic } from '../redis/pubsub.js';
import { runScript } from '../redis/scripts.js';

/** How long a stream's view record (its chat message) is kept, ms: longer than any delivery retry. */
const VIEW_TTL_MS = 24 * 3_600_000;

/** Where a partial reply is shown: the chat of the turn's reply, and whether that chat is private. */
export interface LiveReplyTarget {
  /** The id of the reply the turn will commit (`replyJobId(ids, 'reply')`). */
  liveReplyId: string;
  sessionId: string;
  channel: ChannelName;
  chatId: string;
  threadId?: string;
  /** Platform message the final reply threads to (groups). */
  replyTo?: string;
  chatType?: 'private' | 'group';
}

/**
 * One partial update: the whole text so far (latest wins; a lost update costs nothing). `run`
 * names one attempt of the answer: a new run (a retried call, a crashed worker's successor, the
 * next round after tool calls) starts the stream again at `seq` 0. `dropped`: the text so far was
 * no reply (the round turned into tool calls, or the call failed): nothing of it may stay shown.
 * `answers`: the ids of the inbound messages the turn answers (its own, and those that joined it
 * since), so a chat that waits per message (the API channel) shows the text to theirs only.
 */
export interface LiveReplyUpdate extends LiveReplyTarget {
  run: string;
  seq: number;
  text: string;
  state: 'open' | 'dropped';
  atMs: number;
  answers: readonly string[];
}

/** Live reply updates: workers publish, every gateway subscribes on a dedicated connection (pass `duplicateRedis(redis)`). */
export const LIVE_REPLY_UPDATES = defineTopic<LiveReplyUpdate>({
  channel: liveRepliesChannel, what: 'live reply update', component: 'live-reply-updates', logged: ['sessionId', 'liveReplyId'],
  fields: { liveReplyId: 'string', sessionId: 'string', channel: 'string', chatId: 'string', run: 'string', seq: 'integer', text: 'string', state: ['open', 'dropped'], answers: 'strings' },
});

/** The chat message a stream is shown in, and whether the final reply took it over. */
export interface LiveReplyRecord {
  messageId?: string;
  final: boolean;
}

/** What {@link LiveReplyRecords.begin} answers: go ahead (with the message the stream is shown in), or why not. */
export type LiveReplyCall = { go: true; messageId?: string } | { go: false; reason: 'final' | 'other' };

/** How a platform call changed the stream's message (see {@link LiveReplyRecords.end}). */
export type LiveReplyCallEnd = { message: 'keep' } | { message: 'set'; messageId: string } | { message: 'clear' };

/**
 * The view record of one stream (Redis), shared by every gateway. Each platform call that shows
 * a partial runs between {@link begin} and {@link end}: one gateway shows a stream at a time, no
 * call begins once the final reply took the stream over, and the final reply waits for a call
 * still running ({@link takeOver}), so a preview never lands on top of the final reply.
 */
export interface LiveReplyRecords {
  read(sessionId: string, liveReplyId: string): Promise<LiveReplyRecord>;
  /** Asks to make one platform call for the stream as `owner` (a gateway's id). */
  begin(sessionId: string, liveReplyId: string, owner: string): Promise<LiveReplyCall>;
  /** Ends the call `begin` allowed, recording what it did to the stream's message. */
  end(sessionId: string, liveReplyId: string, owner: string, change: LiveReplyCallEnd): Promise<void>;
  /**
   * Marks the stream final (no partial may be shown for it any more), then waits for a call
   * another gateway is still making (at most its call time). @returns the message the stream is shown in, if any.
   */
  takeOver(sessionId: string, liveReplyId: string): Promise<string | undefined>;
}

/** Timings of {@link createLiveReplyRecords}. */
export interface LiveReplyRecordTimings {
  /** How long a gateway keeps showing a stream after its last call before another may, ms. Default 15 000. */
  ownerMs?: number;
  /** Longest a platform call may hold the final reply back, ms. Default 15 000 (discord.js's REST timeout). */
  callMs?: number;
  /** How often a waiting final reply looks again, ms. Default 25. */
  pollMs?: number;
}

/** {@link LiveReplyRecords} in Redis, under `keyPrefix`. */
export function createLiveReplyRecords(redis: RedisClient, keyPrefix: string = DEFAULT_KEY_PREFIX, timings: LiveReplyRecordTimings = {}): LiveReplyRecords {
  const key = (sessionId: string, liveReplyId: string) => liveReplyRecordKey(sessionId, liveReplyId, keyPrefix);
  const ownerMs = timings.ownerMs ?? 15_000;
  const callMs = timings.callMs ?? 15_000;
  const pollMs = timings.pollMs ?? 25;
  const read = async (sessionId: string, liveReplyId: string) => {
    const fields = await redis.hgetall(key(sessionId, liveReplyId));
    return { ...(fields.messageId ? { messageId: fields.messageId } : {}), final: fields.final === '1', calling: fields.callUntil !== undefined };
  };
  return {
    async read(sessionId, liveReplyId) {
      const { calling: _, ...view } = await read(sessionId, liveReplyId);
      return view;
    },
    async begin(sessionId, liveReplyId, owner) {
      const options = JSON.stringify({ owner, ownerMs, callMs, ttlMs: VIEW_TTL_MS });
      const [verdict, messageId] = (await runScript(redis, 'beginLiveReplyCall', [key(sessionId, liveReplyId)], [options])) as [string, string | null];
      if (verdict === 'ok') return { go: true, ...(messageId ? { messageId } : {}) };
      return { go: false, reason: verdict === 'final' ? 'final' : 'other' };
    },
    async end(sessionId, liveReplyId, owner, change) {
      await runScript(redis, 'endLiveReplyCall', [key(sessionId, liveReplyId)], [JSON.stringify({ owner, ...change })]);
    },
    async takeOver(sessionId, liveReplyId) {
      const [messageId, waitMs] = (await runScript(redis, 'markLiveReplyFinal', [key(sessionId, liveReplyId)], [JSON.stringify({ ttlMs: VIEW_TTL_MS })])) as [string | null, number];
      if (waitMs <= 0) return messageId ?? undefined;
      // Another gateway's call is running: its message (a first preview just sent) is known once it ends.
      const deadline = Date.now() + waitMs;
      let view = await read(sessionId, liveReplyId);
      while (view.calling && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, pollMs));
        view = await read(sessionId, liveReplyId);
      }
      return view.messageId;
    },
  };
}
