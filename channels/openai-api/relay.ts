/**
 * How an answer reaches the request waiting for it when another gateway delivers it (the outbound
 * queue lets any gateway deliver any reply). A waiting request marks its chat in Redis
 * (`apiWaitingKey`, expiring with the longest wait); a gateway that delivers an answer it has no
 * request for looks at the mark: none → the request is gone and the answer is dropped (it stays in
 * the session's history); else it publishes the answer on `apiRepliesChannel`, and the gateway
 * holding the request hands it over.
 */
import { duplicateRedis, type RedisClient } from '../../src/redis/client.js';
import { apiRepliesChannel, apiWaitingKey, DEFAULT_KEY_PREFIX } from '../../src/redis/keys.js';
import type { Logger } from '../../src/log.js';
import type { Delivered } from './waiter.js';

/** Carries answers between the gateways of one Redis. */
export interface ReplyRelay {
  /** Starts listening for answers published by other gateways. */
  start(onAnswer: (chatId: string, item: Delivered) => void): Promise<void>;
  /** Marks that a request for `chatId` waits (on this gateway) for at most `ttlMs`. */
  hold(chatId: string, ttlMs: number): Promise<void>;
  /** Removes the mark. Never throws. */
  release(chatId: string): Promise<void>;
  /** Hands `item` to the gateway whose request waits. @returns false when no request waits for `chatId` anywhere. */
  forward(chatId: string, item: Delivered): Promise<boolean>;
  stop(): Promise<void>;
}

/** The relay over `redis` (its subscriber is a connection of its own). */
export function createRedisReplyRelay(redis: RedisClient, keyPrefix: string = DEFAULT_KEY_PREFIX, log?: Logger): ReplyRelay {
  const channel = apiRepliesChannel(keyPrefix);
  let subscriber: RedisClient | undefined;
  return {
    async start(onAnswer) {
      const sub = duplicateRedis(redis);
      subscriber = sub;
      sub.on('error', (err: Error) => log?.debug({ err }, 'api reply relay connection error'));
      sub.on('message', (from: string, payload: string) => {
        if (from !== channel) return;
        const parsed = parse(payload);
        if (parsed) onAnswer(parsed.chatId, parsed.item);
      });
      await sub.subscribe(channel);
    },
    async hold(chatId, ttlMs) {
      await redis.set(apiWaitingKey(chatId, keyPrefix), '1', 'PX', ttlMs);
    },
    async release(chatId) {
      await redis.del(apiWaitingKey(chatId, keyPrefix)).catch(() => undefined);
    },
    async forward(chatId, item) {
      if ((await redis.exists(apiWaitingKey(chatId, keyPrefix))) === 0) return false;
      await redis.publish(channel, JSON.stringify({ chatId, ...item }));
      return true;
    },
    async stop() {
      const sub = subscriber;
      subscriber = undefined;
      if (sub) await sub.quit().catch(() => sub.disconnect());
    },
  };
}

function parse(payload: string): { chatId: string; item: Delivered } | null {
  try {
    const value = JSON.parse(payload) as Partial<Delivered> & { chatId?: unknown };
    if (typeof value.chatId !== 'string' || typeof value.text !== 'string') return null;
    return { chatId: value.chatId, item: { text: value.text, answersTurn: value.answersTurn === true, asks: value.asks === true } };
  } catch {
    return null;
  }
}
