/**
 * JSON pub/sub topics. A subscription needs a dedicated connection (a subscribed connection can do
 * nothing else; pass `duplicateRedis(redis)`, which works on one Redis and on a Cluster). Messages
 * on pub/sub are hints, never state: a payload that is not JSON or that `parse` refuses, or a
 * handler that throws, is logged (warn) and skipped, never worth a crash.
 */
import { createSilentLogger, type Logger } from '../log.js';
import type { RedisClient } from './client.js';
import { DEFAULT_KEY_PREFIX } from './keys.js';

/** What one topic carries: its channel (by key prefix), how a message is read, and how it is logged. */
export interface TopicSpec<T> {
  channel(keyPrefix: string): string;
  /** Turns a parsed JSON value into a message, or null when it is malformed. */
  parse(value: object): T | null;
  /** What a message is called in the log (`turn signal`, `live reply update`). */
  what: string;
  /** The `component` of its subscribers' log lines. */
  component: string;
  /** Fields of the log line of a failed handler. */
  describe(message: T): Record<string, unknown>;
}

/** A topic's two ends. */
export interface Topic<T> {
  /** Publishes `message`. Best effort: a lost message costs nothing. */
  publish(redis: RedisClient, message: T, keyPrefix?: string): Promise<void>;
  /** Subscribes on a dedicated connection; @returns a function that unsubscribes and closes it. */
  subscribe(subscriber: RedisClient, onMessage: (message: T) => void, keyPrefix?: string, logger?: Logger): Promise<() => Promise<void>>;
}

/** The topic `spec` describes. */
export function defineTopic<T>(spec: TopicSpec<T>): Topic<T> {
  return {
    async publish(redis, message, keyPrefix = DEFAULT_KEY_PREFIX) {
      await redis.publish(spec.channel(keyPrefix), JSON.stringify(message));
    },
    async subscribe(subscriber, onMessage, keyPrefix = DEFAULT_KEY_PREFIX, logger) {
      const log = (logger ?? createSilentLogger()).child({ component: spec.component });
      const channel = spec.channel(keyPrefix);
      subscriber.on('message', (from: string, payload: string) => {
        if (from !== channel) return;
        const message = readMessage(spec, payload);
        if (!message) {
          log.warn({ channel, bytes: payload.length }, `malformed ${spec.what} ignored`);
          return;
        }
        try {
          onMessage(message);
        } catch (err) {
          log.warn({ err, ...spec.describe(message) }, `${spec.what} handler failed`);
        }
      });
      await subscriber.subscribe(channel);
      return async () => {
        await subscriber.unsubscribe(channel).catch(() => undefined);
        subscriber.disconnect();
      };
    },
  };
}

function readMessage<T>(spec: TopicSpec<T>, payload: string): T | null {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return null;
  }
  return typeof value === 'object' && value !== null ? spec.parse(value) : null;
}
