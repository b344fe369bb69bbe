/**
 * The worker's side of `/stop`: each running turn is watched for a stop request meant for it
 * (`src/turn-stop/stop-requests.ts`). A pub/sub wake-up checks at once; a slow poll covers a missed one
 * (a reconnecting subscriber). A turn whose request is taken gets its signal aborted: the model
 * call ends at once, tools see the signal, and the tool loop commits "Stopped." instead of the round.
 */
import type { Logger } from '../src/log.js';
import type { RedisClient } from '../src/redis/client.js';
import type { SessionKeys } from '../src/redis/keys.js';
import { subscribeStops, takeStop } from '../src/turn-stop/stop-requests.js';

/** How often a running turn looks for a stop request without a wake-up, ms. */
export const STOP_POLL_MS = 2_000;

/** The reason a stopped turn's signal carries. */
export class TurnStoppedError extends Error {
  override readonly name = 'TurnStoppedError';
  constructor(readonly sessionId: string) {
    super(`the turn of ${sessionId} was stopped (/stop)`);
  }
}

/** One watched turn: its signal aborts when the turn is stopped. */
export interface TurnWatch {
  readonly signal: AbortSignal;
  /** Stops watching (the turn is over). */
  dispose(): void;
}

/** The stop watches of one worker. */
export interface TurnStops {
  /**
   * Watches the turn of `sessionId` holding the lease `fence`, whose first message is
   * `firstMessageId` (a stop meant for a dead turn it resumes reaches it too); checks once at once.
   */
  watch(sessionId: string, keys: SessionKeys, fence: number, firstMessageId?: string): TurnWatch;
  /** Ends every watch and closes the subscription. */
  close(): Promise<void>;
}

interface Watched {
  keys: SessionKeys;
  fence: number;
  firstMessageId?: string;
  controller: AbortController;
  checking: boolean;
  /** A check was asked for while one ran: run another after it (the request may have come in between). */
  again: boolean;
}

/**
 * Starts the stop watches of a worker: `subscriber` is a dedicated connection (pass
 * `duplicateRedis(redis)`); requests are taken on `redis`.
 */
export async function startTurnStops(deps: { redis: RedisClient; subscriber: RedisClient; logger: Logger }, options: { keyPrefix: string; pollMs?: number }): Promise<TurnStops> {
  const watched = new Map<string, Set<Watched>>();
  const log = deps.logger.child({ component: 'turn-stops' });
  const check = (sessionId: string, entry: Watched): void => {
    if (entry.controller.signal.aborted) return;
    if (entry.checking) {
      entry.again = true;
      return;
    }
    entry.checking = true;
    entry.again = false;
    takeStop(deps.redis, entry.keys, entry.fence, entry.firstMessageId).then((stop) => {
      if (!stop) return;
      log.info({ sessionId, fence: entry.fence }, 'turn stop requested');
      entry.controller.abort(new TurnStoppedError(sessionId));
    }, (err: unknown) => log.warn({ err, sessionId }, 'stop request not read; the next check tries again')).finally(() => {
      entry.checking = false;
      if (entry.again) check(sessionId, entry);
    });
  };
  const unsubscribe = await subscribeStops(deps.subscriber, (sessionId) => {
    for (const entry of watched.get(sessionId) ?? []) check(sessionId, entry);
  }, options.keyPrefix, deps.logger);
  const poll = setInterval(() => {
    for (const [sessionId, entries] of watched) for (const entry of entries) check(sessionId, entry);
  }, options.pollMs ?? STOP_POLL_MS);
  poll.unref();
  return {
    watch(sessionId, keys, fence, firstMessageId) {
      const entry: Watched = { keys, fence, firstMessageId, controller: new AbortController(), checking: false, again: false };
      const entries = watched.get(sessionId) ?? new Set<Watched>();
      entries.add(entry);
      watched.set(sessionId, entries);
      check(sessionId, entry);
      return {
        signal: entry.controller.signal,
        dispose() {
          entries.delete(entry);
          if (entries.size === 0 && watched.get(sessionId) === entries) watched.delete(sessionId);
        },
      };
    },
    async close() {
      clearInterval(poll);
      watched.clear();
      await unsubscribe();
    },
  };
}

/** True when `err` ended a turn because it was stopped (the turn's own signal, aborted by a stop request). */
export function isTurnStopped(err: unknown, signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && (err instanceof TurnStoppedError || (err as { kind?: string } | null)?.kind === 'aborted');
}
