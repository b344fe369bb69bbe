/**
 * A chat's own settings (src/core/busy-mode.ts `ChatSettings`), in the session's meta field
 * `chatSettings`: versioned JSON, written by chat commands outside any turn (no version bump: the
 * projection does not change), read by the gateway's accept and the worker's steer take.
 */
import { CHAT_SETTINGS_VERSION, parseChatSettings, type BusyMode, type ChatSettings } from '../core/busy-mode.js';
import type { RedisClient } from './client.js';
import type { SessionKeys } from './keys.js';

/** The meta field holding a chat's settings. */
export const CHAT_SETTINGS_FIELD = 'chatSettings';

/** Reads a chat's settings. @throws Error when they are of an unknown version. */
export async function readChatSettings(redis: RedisClient, keys: SessionKeys): Promise<ChatSettings> {
  return parseChatSettings(await redis.hget(keys.meta, CHAT_SETTINGS_FIELD));
}

/** Sets the chat's busy mode (`null`: back to the channel's). @returns the settings written. @throws Error when the stored ones are of an unknown version (nothing written). */
export async function writeBusyMode(redis: RedisClient, keys: SessionKeys, mode: BusyMode | null): Promise<ChatSettings> {
  const { busyMode: _old, ...rest } = await readChatSettings(redis, keys);
  const settings: ChatSettings = { ...rest, v: CHAT_SETTINGS_VERSION, ...(mode ? { busyMode: mode } : {}) };
  await redis.hset(keys.meta, CHAT_SETTINGS_FIELD, JSON.stringify(settings));
  return settings;
}
