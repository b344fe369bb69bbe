/**
 * Partial replies through Redis (streaming): a worker publishes the text of the reply it is
 * writing on the pub/sub channel `<prefix>partials`; every gateway listens and shows the text in
 * the chat that owns it. Each update carries the whole text so far, so a gateway that joins late
 * (or missed one) is up to date with the next update; nothing is stored per update. Partials are hints, never state: the final reply
 * travels the outbound queue as always. The gateway records the chat message it shows a stream in
 * (`…:partial-view:<streamId>`), so the final reply can take that message over once, whichever
 * gateway delivers it.
 */
import type { ChannelName } from '../core/inbound.js';
import { createSilentLogger, type Logger } from '../log.js';
import type { RedisClient } from './client.js';
import { DEFAULT_KEY_PREFIX, partialsChannel, partialViewKey } from './keys.js';

/** How long a stream's view record (its chat message) is kept, ms: longer than any delivery retry. */
const VIEW_TTL_MS = 24 * 3_600_000;

/** Where a partial reply is shown: the chat of the turn's reply, and whether that chat is private. */
export interface PartialTarget {
  /** The id of the reply the turn will commit (`replyJobId(ids, 'reply')`). */
  streamId: string;
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
 */
export interface PartialUpdate extends PartialTarget {
  run: string;
  seq: number;
  text: string;
  state: 'open' | 'dropped';
  atMs: number;
}

/** Publishes `update`. Best effort: the caller ignores failures. */
export async function publishPartial(redis: RedisClient, update: PartialUpdate, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<void> {
  await redis.publish(partialsChannel(keyPrefix), JSON.stringify(update));
}

/**
 * Subscribes to partial updates on a dedicated connection (pass `duplicateRedis(redis)`). A
 * malformed payload or a throwing handler is logged and skipped. @returns unsubscribe-and-close.
 */
export async function subscribePartials(subscriber: RedisClient, onUpdate: (update: PartialUpdate) => void, keyPrefix: string = DEFAULT_KEY_PREFIX, logger?: Logger): Promise<() => Promise<void>> {
  const channel = partialsChannel(keyPrefix);
  const log = (logger ?? createSilentLogger()).child({ component: 'partials' });
  subscriber.on('message', (from: string, payload: string) => {
    if (from !== channel) return;
    const update = parsePartial(payload);
    if (!update) {
      log.warn({ channel, bytes: payload.length }, 'malformed partial reply ignored');
      return;
    }
    try {
      onUpdate(update);
    } catch (err) {
      log.warn({ err, sessionId: update.sessionId, streamId: update.streamId }, 'partial reply handler failed');
    }
  });
  await subscriber.subscribe(channel);
  return async () => {
    await subscriber.unsubscribe(channel).catch(() => undefined);
    subscriber.disconnect();
  };
}

/** The chat message a stream is shown in, and whether the final reply took it over. */
export interface PartialView {
  messageId?: string;
  final: boolean;
}

/** The view record of one stream (Redis). */
export interface PartialViews {
  read(sessionId: string, streamId: string): Promise<PartialView>;
  /** Records the message the stream is shown in (kept unless already final). */
  setMessage(sessionId: string, streamId: string, messageId: string): Promise<void>;
  /** Marks the stream final: no partial may be shown for it any more. @returns the view as it was. */
  markFinal(sessionId: string, streamId: string): Promise<PartialView>;
  /** Forgets the message (it was deleted); keeps `final`. */
  clearMessage(sessionId: string, streamId: string): Promise<void>;
}

/** {@link PartialViews} in Redis, under `keyPrefix`. */
export function createPartialViews(redis: RedisClient, keyPrefix: string = DEFAULT_KEY_PREFIX): PartialViews {
  const key = (sessionId: string, streamId: string) => partialViewKey(sessionId, streamId, keyPrefix);
  const toView = (fields: Record<string, string>): PartialView => ({ ...(fields.messageId ? { messageId: fields.messageId } : {}), final: fields.final === '1' });
  return {
    async read(sessionId, streamId) {
      return toView(await redis.hgetall(key(sessionId, streamId)));
    },
    async setMessage(sessionId, streamId, messageId) {
      const k = key(sessionId, streamId);
      await redis.multi().hset(k, 'messageId', messageId).pexpire(k, VIEW_TTL_MS).exec();
    },
    async markFinal(sessionId, streamId) {
      const k = key(sessionId, streamId);
      const [[, before]] = (await redis.multi().hgetall(k).hset(k, 'final', '1').pexpire(k, VIEW_TTL_MS).exec()) as [[unknown, Record<string, string>]];
      return toView(before ?? {});
    },
    async clearMessage(sessionId, streamId) {
      await redis.hdel(key(sessionId, streamId), 'messageId');
    },
  };
}

function parsePartial(payload: string): PartialUpdate | null {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const u = value as Partial<PartialUpdate>;
  const ok = typeof u.streamId === 'string' && typeof u.sessionId === 'string' && typeof u.channel === 'string' && typeof u.chatId === 'string'
    && typeof u.run === 'string' && Number.isInteger(u.seq) && typeof u.text === 'string' && (u.state === 'open' || u.state === 'dropped');
  return ok ? (u as PartialUpdate) : null;
}
