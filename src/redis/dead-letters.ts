import type { InboundMessage } from '../core/inbound.js';
import type { RedisClient } from './client.js';
import { runScript } from './scripts.js';
import type { SessionKeys } from './keys.js';

/** One dead letter: the inbound message, or the raw item when it is not one (a malformed inbox item). */
export type DeadLetter = { message: InboundMessage; raw?: undefined } | { message?: undefined; raw: string };

/** The session's dead-letter list (`keys.failed`), oldest first. */
export async function readDeadLetters(redis: RedisClient, keys: SessionKeys): Promise<DeadLetter[]> {
  const items = await redis.lrange(keys.failed, 0, -1);
  return items.map(toDeadLetter);
}

/** Number of messages in the session's dead-letter list. */
export async function deadLetterCount(redis: RedisClient, keys: SessionKeys): Promise<number> {
  return redis.llen(keys.failed);
}

/**
 * Moves every dead letter back to the front of the session's inbox, in their order and ahead of
 * anything already waiting, atomically (one script on the session's slot). The caller then
 * enqueues a turn. @returns the number of messages moved.
 */
export async function requeueDeadLetters(redis: RedisClient, keys: SessionKeys): Promise<number> {
  return Number(await runScript(redis, 'requeueDeadLetters', [keys.failed, keys.inbox]));
}

function toDeadLetter(raw: string): DeadLetter {
  try {
    const value = JSON.parse(raw) as Partial<InboundMessage> | null;
    if (value && typeof value.id === 'string' && typeof value.text === 'string') return { message: value as InboundMessage };
  } catch {
    // not JSON: shown raw
  }
  return { raw };
}
