import type { RedisClient } from './client.js';
import type { SessionKeys } from './keys.js';

/** Maximum notes per session; `remember` beyond it fails with a readable error. */
export const MAX_NOTES = 50;

/** The per-session notes ledger (a hash), kept outside the projection so compaction never touches it. */
export interface SessionNotes {
  list(): Promise<Record<string, string>>;
  /** @throws Error when the session already holds {@link MAX_NOTES} other notes. */
  set(key: string, text: string): Promise<void>;
  remove(key: string): Promise<boolean>;
}

/** Notes of one session in Redis. */
export function createSessionNotes(redis: RedisClient, keys: SessionKeys): SessionNotes {
  return {
    list: () => redis.hgetall(keys.notes),
    async set(key, text) {
      const exists = await redis.hexists(keys.notes, key);
      if (!exists && (await redis.hlen(keys.notes)) >= MAX_NOTES) throw new Error(`at most ${MAX_NOTES} notes; forget one first`);
      await redis.hset(keys.notes, key, text);
    },
    async remove(key) {
      return (await redis.hdel(keys.notes, key)) > 0;
    },
  };
}
