/**
 * One JSON pub/sub subscription on a dedicated connection (a subscribed connection can do nothing
 * else; pass `duplicateRedis(redis)`, which works on one Redis and on a Cluster). Messages on pub/sub
 * are hints, never state: a payload `parse` refuses, or a handler that throws, is logged (warn) and
 * skipped, never worth a crash.
 */
import { createSilentLogger, type Logger } from '../log.js';
import type { RedisClient } from './client.js';

/** What one subscription listens to, and how its log lines name it. */
export interface JsonSubscription<T> {
  channel: string;
  /** Turns a payload into a message, or null when it is malformed. */
  parse(payload: string): T | null;
  /** What a message is called in the log (`turn signal`, `partial reply`). */
  what: string;
  /** Fields of the log line of a failed handler. */
  describe(message: T): Record<string, unknown>;
}

/** Subscribes; @returns a function that unsubscribes and closes the connection. */
export async function subscribeJson<T>(subscriber: RedisClient, subscription: JsonSubscription<T>, onMessage: (message: T) => void, log: Logger): Promise<() => Promise<void>> {
  const { channel, what } = subscription;
  subscriber.on('message', (from: string, payload: string) => {
    if (from !== channel) return;
    const message = subscription.parse(payload);
    if (!message) {
      log.warn({ channel, bytes: payload.length }, `malformed ${what} ignored`);
      return;
    }
    try {
      onMessage(message);
    } catch (err) {
      log.warn({ err, ...subscription.describe(message) }, `${what} handler failed`);
    }
  });
  await subscriber.subscribe(channel);
  return async () => {
    await subscriber.unsubscribe(channel).catch(() => undefined);
    subscriber.disconnect();
  };
}

/** A JSON pub/sub topic: its channel (by key prefix), how a payload is read, and how it is logged. */
export interface JsonTopic<T> extends Omit<JsonSubscription<T>, 'channel'> {
  channel(keyPrefix: string): string;
  /** The `component` of its subscribers' log lines. */
  component: string;
}

/** Publishes `message` on `topic`. Best effort: pub/sub messages are hints, a lost one costs nothing. */
export async function publishJson<T>(redis: RedisClient, topic: JsonTopic<T>, message: T, keyPrefix: string): Promise<void> {
  await redis.publish(topic.channel(keyPrefix), JSON.stringify(message));
}

/** Subscribes to `topic` on a dedicated connection; @returns a function that unsubscribes and closes it. */
export async function subscribeTopic<T>(subscriber: RedisClient, topic: JsonTopic<T>, onMessage: (message: T) => void, keyPrefix: string, logger?: Logger): Promise<() => Promise<void>> {
  const log = (logger ?? createSilentLogger()).child({ component: topic.component });
  return subscribeJson(subscriber, { ...topic, channel: topic.channel(keyPrefix) }, onMessage, log);
}
