/**
 * The gateway's copy of the budget exhaustion markers, so its early answer costs no Redis command
 * per message. The budget script publishes every marker it sets or drops on `budgetKeys().markerChannel`;
 * this keeps what it read and heard, and reads Redis only for a key it has not seen. While its
 * subscription is down (a reconnect), it keeps nothing and reads every time: a marker set then is
 * never missed.
 */
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import { budgetKeys } from '../redis/keys.js';

/** Reads exhaustion markers by key (null: none). */
export interface MarkerReader {
  read(keys: readonly string[]): Promise<Array<string | null>>;
}

/** A {@link MarkerReader} kept up to date by the budget script's announcements. */
export interface MarkerWatch extends MarkerReader {
  /** Whether the subscription is up (the copy is used); while not, every read goes to Redis. */
  readonly live: boolean;
  /** Unsubscribes and closes the subscriber connection. */
  close(): Promise<void>;
}

/** What the script publishes: a marker key and its new value (absent: dropped). */
interface Announcement {
  key: string;
  marker?: string;
}

/** The most keys kept; past it the oldest go (a reader reads them again). */
export const DEFAULT_MARKER_ENTRIES = 100_000;

/** One MGET: what a reader without a copy does. */
export function readMarkers(redis: RedisClient): MarkerReader {
  return { read: async (keys) => (keys.length === 0 ? [] : redis.mget(...keys)) };
}

/**
 * Watches the markers of `keyPrefix` on `subscriber` (a connection of its own, which this takes
 * over) and reads what it has not seen through `redis`. Resolves once subscribed.
 */
export async function watchBudgetMarkers(deps: { redis: RedisClient; subscriber: RedisClient; logger: Logger }, options: { keyPrefix: string; maxEntries?: number }): Promise<MarkerWatch> {
  const { redis, subscriber, logger } = deps;
  const channel = budgetKeys(options.keyPrefix).markerChannel;
  const maxEntries = options.maxEntries ?? DEFAULT_MARKER_ENTRIES;
  const log = logger.child({ component: 'budget-markers' });
  const copy = new Map<string, string | null>();
  const fallback = readMarkers(redis);
  let live = false;
  // Bumped by every announcement and every change of the subscription: a read that began before
  // one may hold a value older than what was heard, so it is used once and not kept.
  let epoch = 0;
  // Bumped by every loss of the subscription only: a subscription confirmed across none is up.
  let losses = 0;
  let closed = false;

  const keep = (key: string, value: string | null): void => {
    copy.delete(key);
    copy.set(key, value);
    if (copy.size > maxEntries) copy.delete(copy.keys().next().value!);
  };
  const lose = (why: string): void => {
    epoch += 1;
    losses += 1;
    if (live) log.debug({ why }, 'budget marker subscription lost: reading markers from Redis until it is back');
    live = false;
    copy.clear();
  };
  const subscribe = async (): Promise<void> => {
    const at = losses;
    await subscriber.subscribe(channel);
    // Not closed, and no loss since: the subscription answered on the connection that is up.
    if (!closed && at === losses && !live && subscriber.status === 'ready') {
      epoch += 1;
      live = true;
    }
  };

  subscriber.on('message', (from: string, payload: string) => {
    if (from !== channel) return;
    const heard = parseAnnouncement(payload);
    if (!heard) {
      log.warn({ channel, bytes: payload.length }, 'malformed budget marker announcement ignored; reading markers from Redis');
      lose('malformed announcement');
      if (!closed) void subscribe().catch(() => undefined);
      return;
    }
    epoch += 1;
    if (live) keep(heard.key, heard.marker ?? null);
  });
  for (const event of ['close', 'reconnecting', 'end']) subscriber.on(event, () => lose(event));
  // ioredis subscribes again by itself after a reconnect; this one answers after it, on the same connection.
  subscriber.on('ready', () => {
    if (!closed) void subscribe().catch((err: unknown) => log.debug({ err }, 'budget marker subscription not renewed'));
  });
  await subscribe();

  return {
    get live() {
      return live;
    },
    async read(keys) {
      if (!live) return fallback.read(keys);
      const missing = keys.filter((key) => !copy.has(key));
      if (missing.length === 0) return keys.map((key) => copy.get(key)!);
      const at = epoch;
      const raw = await fallback.read(missing);
      const fresh = new Map(missing.map((key, k) => [key, raw[k] ?? null]));
      if (live && at === epoch) for (const [key, value] of fresh) keep(key, value);
      return keys.map((key) => (fresh.has(key) ? fresh.get(key)! : copy.get(key) ?? null));
    },
    async close() {
      closed = true;
      lose('closed');
      await subscriber.unsubscribe(channel).catch(() => undefined);
      subscriber.disconnect();
    },
  };
}

function parseAnnouncement(payload: string): Announcement | null {
  try {
    const value = JSON.parse(payload) as Partial<Announcement> | null;
    if (typeof value !== 'object' || value === null || typeof value.key !== 'string') return null;
    if (value.marker !== undefined && typeof value.marker !== 'string') return null;
    return { key: value.key, ...(value.marker === undefined ? {} : { marker: value.marker }) };
  } catch {
    return null;
  }
}
