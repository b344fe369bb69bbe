/**
 * JSON pub/sub topics. A subscription needs a dedicated connection (a subscribed connection can do
 * nothing else; pass `duplicateRedis(redis)`, which works on one Redis and on a Cluster). Messages
 * on pub/sub are hints, never state: a payload that is not a JSON object with the topic's fields, or a
 * handler that throws, is logged (warn) and skipped, never worth a crash.
 */
import { createSilentLogger, type Logger } from '../log.js';
import type { RedisClient } from './client.js';
import { DEFAULT_KEY_PREFIX } from './keys.js';

/** The rule of one field of a message: its `typeof`, a whole number, a list of strings, or the strings it may be. */
export type FieldRule = 'string' | 'number' | 'boolean' | 'integer' | 'strings' | readonly string[];

/** What one topic carries: its channel (by key prefix), the fields a message needs, and how it is logged. */
export interface TopicSpec<T> {
  channel(keyPrefix: string): string;
  /** The fields every message must carry, each with its rule; a message that breaks one is malformed. */
  fields: Readonly<Partial<Record<keyof T & string, FieldRule>>>;
  /** What a message is called in the log (`turn signal`, `live reply update`). */
  what: string;
  /** The `component` of its subscribers' log lines. */
  component: string;
  /** The fields of a message named in the log line of a failed handler. */
  logged: ReadonlyArray<keyof T & string>;
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
          log.warn({ err, ...Object.fromEntries(spec.logged.map((name) => [name, message[name]])) }, `${spec.what} handler failed`);
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
  if (typeof value !== 'object' || value === null) return null;
  const record = value as Record<string, unknown>;
  const rules = Object.entries(spec.fields) as Array<[string, FieldRule]>;
  return rules.every(([name, rule]) => fits(record[name], rule)) ? (value as T) : null;
}

function fits(value: unknown, rule: FieldRule): boolean {
  if (rule === 'integer') return Number.isInteger(value);
  if (rule === 'strings') return Array.isArray(value) && value.every((item) => typeof item === 'string');
  if (typeof rule === 'string') return typeof value === rule;
  return typeof value === 'string' && rule.includes(value);
}
