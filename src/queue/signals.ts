import type { Redis } from 'ioredis';
import type { ChannelName } from '../core/inbound.js';
import type { RedisClient } from '../redis/client.js';
import { DEFAULT_KEY_PREFIX, turnSignalChannel } from '../redis/keys.js';

/** A turn signal published by workers on the pub/sub channel `<keyPrefix>signals`. */
export interface TurnSignal {
  /** `turn-started` when a turn begins, `typing` before each model call, `turn-ended` after commit. */
  type: 'turn-started' | 'typing' | 'turn-ended';
  sessionId: string;
  channel: ChannelName;
  chatId: string;
  threadId?: string;
  atMs: number;
}

/** Publishes a turn signal (best effort: signals are hints, never state). */
export async function publishTurnSignal(redis: RedisClient, signal: TurnSignal, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<void> {
  await redis.publish(turnSignalChannel(keyPrefix), JSON.stringify(signal));
}

/**
 * Subscribes to turn signals on a dedicated connection (a subscribed connection can do nothing
 * else; pass `redis.duplicate()`). @returns a function that unsubscribes and closes it.
 */
export async function subscribeTurnSignals(subscriber: Redis, onSignal: (signal: TurnSignal) => void, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<() => Promise<void>> {
  const channel = turnSignalChannel(keyPrefix);
  subscriber.on('message', (from: string, payload: string) => {
    if (from === channel) onSignal(JSON.parse(payload) as TurnSignal);
  });
  await subscriber.subscribe(channel);
  return async () => {
    await subscriber.unsubscribe(channel);
    subscriber.disconnect();
  };
}
