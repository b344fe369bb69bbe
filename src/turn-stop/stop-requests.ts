/**
 * `/stop` through Redis: the gateway records a stop request for the session's turn (its lease's
 * fencing token and its first message, so only that turn stops — on whichever worker resumes it
 * if its own died; or `queued` when messages still wait for a turn), and wakes every worker on a
 * pub/sub channel; the worker holding the session's lease takes the request and aborts its turn. The request is state (a worker that missed the wake-up
 * finds it when it next checks), the wake-up only a hint.
 */
import type { Logger } from '../log.js';
import { createSilentLogger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import { DEFAULT_KEY_PREFIX, turnStopChannel, type SessionKeys } from '../redis/keys.js';
import { runScriptWithOptions } from '../redis/scripts.js';

/**
 * How long a stop request waits for its turn, in ms: long enough for a dead worker's turn to be
 * resumed elsewhere (a request for a turn that already ended matches no later turn).
 */
export const STOP_REQUEST_TTL_MS = 600_000;

/** What a stop request found: a running turn, messages waiting for one, or nothing to stop. */
export type StopRequest = { state: 'running'; fence: number } | { state: 'queued' } | { state: 'idle' };

/** Options of {@link requestStop}. */
export interface RequestStopOptions {
  keyPrefix?: string;
  /** Default {@link STOP_REQUEST_TTL_MS}. */
  ttlMs?: number;
  /**
   * The id of a message in `interrupt` busy mode: only a running turn that has not taken it is
   * stopped (nothing waiting is, so the message's own turn never is). Default: a plain `/stop`.
   */
  interrupt?: string;
}

/**
 * Records a stop request for the session's running (or next) turn and publishes the wake-up.
 * @returns what there was to stop; `idle` writes and publishes nothing.
 */
export async function requestStop(redis: RedisClient, sessionId: string, keys: SessionKeys, options: RequestStopOptions = {}): Promise<StopRequest> {
  const reply = String(await runScriptWithOptions(redis, 'requestStop', [keys.lease, keys.processing, keys.inbox, keys.stop], { ttlMs: options.ttlMs ?? STOP_REQUEST_TTL_MS, ...(options.interrupt === undefined ? {} : { interrupt: options.interrupt }) }));
  if (reply === 'idle') return { state: 'idle' };
  await redis.publish(turnStopChannel(options.keyPrefix ?? DEFAULT_KEY_PREFIX), sessionId);
  if (reply === 'queued') return { state: 'queued' };
  return { state: 'running', fence: Number(reply.slice('running:'.length)) };
}

/**
 * Takes the session's stop request if it is for the turn holding `fence`, for a dead turn this one
 * resumes (the same first message, `firstMessageId`), or for the next turn.
 * @returns true when the turn must stop (the request is deleted).
 */
export async function takeStop(redis: RedisClient, keys: SessionKeys, fence: number, firstMessageId?: string): Promise<boolean> {
  const options = firstMessageId === undefined ? { fence: String(fence) } : { fence: String(fence), first: firstMessageId };
  return Number(await runScriptWithOptions(redis, 'takeStop', [keys.stop], options)) === 1;
}

/**
 * Subscribes to stop wake-ups on a dedicated connection (pass `duplicateRedis(redis)`): `onStop`
 * gets the session id. A throwing handler is logged and skipped. @returns a function that
 * unsubscribes and closes the connection.
 */
export async function subscribeStops(subscriber: RedisClient, onStop: (sessionId: string) => void, keyPrefix: string = DEFAULT_KEY_PREFIX, logger?: Logger): Promise<() => Promise<void>> {
  const channel = turnStopChannel(keyPrefix);
  const log = (logger ?? createSilentLogger()).child({ component: 'turn-stops' });
  subscriber.on('message', (from: string, sessionId: string) => {
    if (from !== channel) return;
    try {
      onStop(sessionId);
    } catch (err) {
      log.warn({ err, sessionId }, 'stop handler failed');
    }
  });
  await subscriber.subscribe(channel);
  return async () => {
    await subscriber.unsubscribe(channel).catch(() => undefined);
    subscriber.disconnect();
  };
}
