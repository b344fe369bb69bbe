import type { Logger } from '../log.js';
import type { TurnProducer } from '../queue/producer.js';
import type { RedisClient } from '../redis/client.js';
import { runScriptWithOptions } from '../redis/scripts.js';
import { pendingIndexKey, sessionKeys } from '../redis/keys.js';

/** Options of {@link startPendingSweeper}. */
export interface PendingSweeperOptions {
  keyPrefix: string;
  /** How often the pending index is swept, ms. Default 30 000. */
  intervalMs?: number;
  /** Entries younger than this are left to the ingest that wrote them, ms. Default 10 000. */
  graceMs?: number;
  /** Sessions looked at per sweep. Default 500. */
  batch?: number;
  /** Sweep once right away (a restarted gateway picks up what a dead one left). Default true. */
  sweepAtStart?: boolean;
  now?: () => number;
}

/** A running sweeper. */
export interface PendingSweeper {
  /** Runs one sweep now. @returns how many sessions got a turn enqueued. */
  sweep(): Promise<number>;
  stop(): void;
}

/**
 * Makes sure every accepted message gets a turn: sessions in the pending index whose inbox still
 * holds messages get their turn enqueued (deduplicated, so a pending turn is not doubled); the
 * others leave the index. Runs at start and every `intervalMs`.
 */
export function startPendingSweeper(deps: { redis: RedisClient; producer: TurnProducer; logger: Logger }, options: PendingSweeperOptions): PendingSweeper {
  const log = deps.logger.child({ component: 'sweeper' });
  const now = options.now ?? Date.now;
  const index = pendingIndexKey(options.keyPrefix);
  const sweep = async (): Promise<number> => {
    const entries = await deps.redis.zrangebyscore(index, '-inf', now() - (options.graceMs ?? 10_000), 'WITHSCORES', 'LIMIT', 0, options.batch ?? 500);
    let enqueued = 0;
    for (let i = 0; i < entries.length; i += 2) {
      const sessionId = entries[i] ?? '';
      const score = entries[i + 1] ?? '0';
      if ((await deps.redis.llen(sessionKeys(sessionId, options.keyPrefix).inbox)) > 0) {
        await deps.producer.enqueueTurn(sessionId);
        enqueued++;
      }
      await runScriptWithOptions(deps.redis, 'forgetPending', [index], { sessionId, seenScore: Number(score) });
    }
    if (enqueued > 0) log.info({ enqueued }, 'turns enqueued for waiting messages');
    return enqueued;
  };
  let stopped = false;
  // A sweep cut short by the shutdown (its connection closing) is no failure worth a warning.
  const tick = () => void sweep().catch((err: unknown) => { if (!stopped) log.warn({ err }, 'pending sweep failed'); });
  const timer = setInterval(tick, options.intervalMs ?? 30_000);
  timer.unref();
  if (options.sweepAtStart !== false) tick();
  return {
    sweep,
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
