/**
 * Platform updates a channel set aside after they kept failing (a malformed update, a handler
 * that throws): kept in one list per channel, newest first, for an operator to read.
 */
import type { RedisClient } from './client.js';
import { channelDeadLetterKey } from './keys.js';

/** Updates kept per channel (the newest). */
const CHANNEL_DEAD_LETTER_RETENTION = 1000;

/** One set-aside update: the raw update and why it was set aside. */
export interface ChannelDeadLetter {
  channel: string;
  updateId: number;
  /** The update as the platform sent it, JSON. */
  raw: string;
  error: string;
  attempts: number;
  atMs: number;
}

/** Keeps `entry` in its channel's list. `@throws` when Redis cannot be written (the caller keeps the update). */
export async function setAsideChannelUpdate(redis: RedisClient, entry: ChannelDeadLetter, prefix?: string): Promise<void> {
  const key = channelDeadLetterKey(entry.channel, prefix);
  await redis.multi().lpush(key, JSON.stringify(entry)).ltrim(key, 0, CHANNEL_DEAD_LETTER_RETENTION - 1).exec();
}

/** The channel's set-aside updates, newest first. */
export async function readChannelDeadLetters(redis: RedisClient, channel: string, prefix?: string): Promise<ChannelDeadLetter[]> {
  const items = await redis.lrange(channelDeadLetterKey(channel, prefix), 0, -1);
  return items.map((item) => JSON.parse(item) as ChannelDeadLetter);
}
