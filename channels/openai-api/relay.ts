/**
 * How an answer reaches the request waiting for it when another gateway delivers it (the outbound
 * queue lets any gateway deliver any reply), and the rule of one request at a time per session
 * across gateways. Both rest on one key per chat, the claim (`apiAskingKey`: the waiting request's
 * message id, expiring unless renewed). A request waiting for a turn's answer claims its chat (a
 * second one gets 409); a command's request claims it only as long as no such request wants it, and
 * is listed beside the claim (`apiYieldingKey`) while it waits, so it is found once the request it
 * yielded to is answered. A gateway that delivers an answer none of its requests takes looks at
 * both: none → no request waits anywhere and the answer is dropped (it stays in the session's history); else it publishes
 * the answer on `apiRepliesChannel`, and the gateway holding the request hands it over.
 */
import { randomUUID } from 'node:crypto';
import { duplicateRedis, type RedisClient } from '../../src/redis/client.js';
import { apiAskingKey, apiRepliesChannel, apiYieldingKey, DEFAULT_KEY_PREFIX } from '../../src/redis/keys.js';
import { runScriptWithOptions } from '../../src/redis/scripts.js';
import { defineTopic } from '../../src/redis/pubsub.js';
import type { Logger } from '../../src/log.js';
import type { Delivered } from './waiter.js';

/** An answer on its way to the gateway whose request waits for it. */
interface RelayedAnswer extends Delivered {
  chatId: string;
  /** The relay that published it (which does not take it again). */
  origin?: string;
}

/**
 * How long a request's claim on its session lasts unless renewed, ms: the request renews it every
 * third of this while it waits, so a gateway that died frees its sessions within this time.
 */
export const API_CLAIM_TTL_MS = 30_000;

const API_ANSWERS = defineTopic<RelayedAnswer>({
  channel: apiRepliesChannel, what: 'api answer', component: 'api-relay', logged: ['chatId'],
  fields: { chatId: 'string', text: 'string' },
});

/** Carries answers between the gateways of one Redis. */
export interface ReplyRelay {
  /** Starts listening for answers published by other gateways. */
  start(onAnswer: (chatId: string, item: Delivered) => void): Promise<void>;
  /**
   * Claims `chatId` for the request of message `messageId` on every gateway, or renews its claim, for
   * {@link API_CLAIM_TTL_MS}. `yields` (a command's request): the claim gives way to a request that
   * does not yield. @returns false when another request (here or on another gateway) has it.
   */
  claim(chatId: string, messageId: string, yields?: boolean): Promise<boolean>;
  /** Gives the claim up if the request of `messageId` still has it. Never throws. */
  unclaim(chatId: string, messageId: string): Promise<void>;
  /** Hands `item` to the gateway whose request waits. @returns false when no request waits for `chatId` anywhere. */
  forward(chatId: string, item: Delivered): Promise<boolean>;
  stop(): Promise<void>;
}

/** The relay over `redis` (its subscriber is a connection of its own). */
export function createRedisReplyRelay(redis: RedisClient, keyPrefix: string = DEFAULT_KEY_PREFIX, log?: Logger): ReplyRelay {
  let unsubscribe: (() => Promise<void>) | undefined;
  const origin = randomUUID();
  const claimKeys = (chatId: string) => [apiAskingKey(chatId, keyPrefix), apiYieldingKey(chatId, keyPrefix)];
  return {
    async start(onAnswer) {
      const subscriber = duplicateRedis(redis);
      subscriber.on('error', (err: Error) => log?.debug({ err }, 'api relay connection error'));
      // The publisher's own requests did not take it before it was published.
      unsubscribe = await API_ANSWERS.subscribe(subscriber, (answer) => {
        if (answer.origin !== origin) onAnswer(answer.chatId, toDelivered(answer));
      }, keyPrefix, log);
    },
    async claim(chatId, messageId, yields = false) {
      return Number(await runScriptWithOptions(redis, 'holdClaim', claimKeys(chatId), { holder: messageId, ttlMs: API_CLAIM_TTL_MS, yields })) === 1;
    },
    async unclaim(chatId, messageId) {
      await runScriptWithOptions(redis, 'holdClaim', claimKeys(chatId), { holder: messageId, ttlMs: 0 })
        .catch((err: unknown) => log?.warn({ err, chatId }, 'api session claim not released; it expires'));
    },
    async forward(chatId, item) {
      // A command's request that yielded to a request answered since holds no claim, but still waits.
      if ((await redis.exists(...claimKeys(chatId))) === 0) return false;
      await API_ANSWERS.publish(redis, { chatId, origin, ...item }, keyPrefix);
      return true;
    },
    async stop() {
      const stop = unsubscribe;
      unsubscribe = undefined;
      await stop?.();
    },
  };
}

/** The answer as it was delivered: flags that are not `true` are false, unknown fields left out. */
function toDelivered(answer: RelayedAnswer): Delivered {
  const answers = Array.isArray(answer.answers) && answer.answers.every((id) => typeof id === 'string') ? { answers: answer.answers } : {};
  return {
    text: answer.text, answersTurn: answer.answersTurn === true, asks: answer.asks === true, ...(typeof answer.replyId === 'string' ? { replyId: answer.replyId } : {}), ...answers,
    ...(Number.isInteger(answer.questions) && answer.questions! > 0 ? { questions: answer.questions } : {}),
    ...(answer.refusal === 'over_budget' ? { refusal: answer.refusal } : {}),
  };
}
