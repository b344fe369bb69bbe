import type { ChannelName } from '../core/inbound.js';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import { DEFAULT_KEY_PREFIX, turnSignalChannel } from '../redis/keys.js';
import { publishJson, subscribeTopic, type JsonTopic } from '../redis/pubsub.js';

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

const TURN_SIGNALS: JsonTopic<TurnSignal> = {
  channel: turnSignalChannel, parse: parseSignal, what: 'turn signal', component: 'turn-signals',
  describe: (signal) => ({ sessionId: signal.sessionId, type: signal.type }),
};

/** Publishes a turn signal (best effort: signals are hints, never state). */
export async function publishTurnSignal(redis: RedisClient, signal: TurnSignal, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<void> {
  await publishJson(redis, TURN_SIGNALS, signal, keyPrefix);
}

/**
 * Subscribes to turn signals on a dedicated connection (a subscribed connection can do nothing
 * else; pass `duplicateRedis(redis)`, which works on one Redis and on a Cluster). A malformed
 * payload, or an `onSignal` that throws, is logged (warn) and skipped: signals are hints, never
 * worth a crash. @returns a function that unsubscribes and closes the connection.
 */
export async function subscribeTurnSignals(subscriber: RedisClient, onSignal: (signal: TurnSignal) => void, keyPrefix: string = DEFAULT_KEY_PREFIX, logger?: Logger): Promise<() => Promise<void>> {
  return subscribeTopic(subscriber, TURN_SIGNALS, onSignal, keyPrefix, logger);
}

const SIGNAL_TYPES = new Set<string>(['turn-started', 'typing', 'turn-ended']);

function parseSignal(payload: string): TurnSignal | null {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const signal = value as Partial<TurnSignal>;
  const ok = SIGNAL_TYPES.has(String(signal.type)) && typeof signal.sessionId === 'string' && typeof signal.channel === 'string' && typeof signal.chatId === 'string';
  return ok ? (signal as TurnSignal) : null;
}
