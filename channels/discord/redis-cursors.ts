/**
 * The Discord channels' catch-up cursors (channels/discord/catch-up.ts) in Redis: one hash per
 * bot, field = channel id, value = the newest message handled there, where it was, and when. Every
 * gateway of the bot reads the same hash, so the one that takes the connection over after a crash
 * catches up what was sent in between. Bounded: entries older than the catch-up window are
 * forgotten at each catch-up. Beside them, when a gateway of the bot was last connected: the start
 * of a gap, for the channels that have no cursor yet.
 */
import type { DiscordCursorStore, DiscordPlace } from './catch-up-cursors.js';
import type { RedisClient } from '../../src/redis/client.js';
import { DEFAULT_KEY_PREFIX, discordConnectedKey, discordCursorsKey } from '../../src/redis/keys.js';

/** The gap start is kept a week: longer than any gap worth catching up (the window is an hour). */
const CONNECTED_TTL_SECONDS = 7 * 86_400;

interface StoredCursor {
  m: string;
  g: string | null;
  p?: string;
  /** When it was recorded, ms since epoch. */
  t: number;
}

/** The catch-up cursors of bot `botId` (see src/redis/channel-lease.ts botIdentity). */
export function createDiscordCursors(redis: RedisClient, botId: string, keyPrefix: string = DEFAULT_KEY_PREFIX): DiscordCursorStore {
  const key = discordCursorsKey(botId, keyPrefix);
  const connectedKey = discordConnectedKey(botId, keyPrefix);
  return {
    async record(place, messageId) {
      const value: StoredCursor = { m: messageId, g: place.guildId, ...(place.threadParentId ? { p: place.threadParentId } : {}), t: Date.now() };
      await redis.hset(key, place.channelId, JSON.stringify(value));
    },
    async recent(sinceMs, limit) {
      const all = await redis.hgetall(key);
      const fresh: Array<DiscordPlace & { messageId: string; t: number }> = [];
      const stale: string[] = [];
      for (const [channelId, raw] of Object.entries(all)) {
        const cursor = parse(raw);
        if (!cursor || cursor.t < sinceMs) stale.push(channelId);
        else fresh.push({ channelId, guildId: cursor.g, ...(cursor.p ? { threadParentId: cursor.p } : {}), messageId: cursor.m, t: cursor.t });
      }
      if (stale.length > 0) await redis.hdel(key, ...stale);
      return fresh.sort((a, b) => b.t - a.t).slice(0, limit).map(({ t: _, ...place }) => place);
    },
    async forget(channelId) {
      await redis.hdel(key, channelId);
    },
    async markConnected(atMs) {
      await redis.set(connectedKey, String(Math.floor(atMs)), 'EX', CONNECTED_TTL_SECONDS);
    },
    async lastConnected() {
      const raw = await redis.get(connectedKey);
      const value = raw === null ? NaN : Number(raw);
      return Number.isFinite(value) ? value : null;
    },
  };
}

function parse(raw: string): StoredCursor | null {
  try {
    const value = JSON.parse(raw) as Partial<StoredCursor>;
    return typeof value.m === 'string' && /^\d+$/.test(value.m) && typeof value.t === 'number' && (value.g === null || typeof value.g === 'string') ? (value as StoredCursor) : null;
  } catch {
    return null;
  }
}
