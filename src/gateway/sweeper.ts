import { createOutageLog, type Logger } from '../log.js';
import { startPeriodic, type Periodic } from '../periodic.js';
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
  /** Sessions looked at per batch (one index read, their inbox lengths at once, one removal script). Default 1000. */
  batch?: number;
  /**
   * Batches per sweep at most. The default (200 batches of 1000 every 30 s) clears over 6,000
   * new sessions a second; a sweep stops early when a batch comes back short.
   */
  maxBatches?: number;
  /** Sweep once right away (a restarted gateway picks up what a dead one left). Default true. */
  sweepAtStart?: boolean;
  now?: () => number;
}

interface Entry {
  sessionId: string;
  score: number;
}

/**
 * Makes sure every accepted message gets a turn: sessions in the pending index whose inbox still
 * holds messages get their turn enqueued (deduplicated, so a pending turn is not doubled); the
 * others leave the index. Every accepted message marks its session, so the index grows with the
 * new sessions of the last `graceMs` + `intervalMs` and no more: each sweep takes every entry
 * older than the grace, a batch at a time — its inbox lengths read at once (the commands travel
 * together), the turns enqueued at once, one script removing the batch. Runs at start and every
 * `intervalMs`; one sweep at a time.
 */
export function startPendingSweeper(deps: { redis: RedisClient; producer: TurnProducer; logger: Logger }, options: PendingSweeperOptions): Periodic<number> {
  const log = deps.logger.child({ component: 'sweeper' });
  const outage = createOutageLog(log);
  const now = options.now ?? Date.now;
  const index = pendingIndexKey(options.keyPrefix);
  const batch = options.batch ?? 1000;
  const maxBatches = options.maxBatches ?? 200;

  const sweepBatch = async (cutoff: number): Promise<{ seen: number; enqueued: number }> => {
    const raw = await deps.redis.zrangebyscore(index, '-inf', cutoff, 'WITHSCORES', 'LIMIT', 0, batch);
    const entries: Entry[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) entries.push({ sessionId: raw[i]!, score: Number(raw[i + 1]) });
    if (entries.length === 0) return { seen: 0, enqueued: 0 };
    const lengths = await Promise.all(entries.map((e) => deps.redis.llen(sessionKeys(e.sessionId, options.keyPrefix).inbox)));
    const waiting = entries.filter((_, k) => lengths[k]! > 0);
    const outcomes = await Promise.allSettled(waiting.map((e) => deps.producer.enqueueTurn(e.sessionId)));
    // A session whose turn could not be enqueued stays in the index: the next sweep tries again.
    const failed = new Set(waiting.filter((_, k) => outcomes[k]!.status === 'rejected').map((e) => e.sessionId));
    if (failed.size > 0) outage.warn({ sessions: failed.size, err: outcomes.find((o) => o.status === 'rejected')?.reason }, 'turns not enqueued for waiting messages; next sweep retries');
    const done = entries.filter((e) => !failed.has(e.sessionId)).map((e) => [e.sessionId, e.score]);
    if (done.length > 0) await runScriptWithOptions(deps.redis, 'forgetPending', [index], { entries: done });
    return { seen: failed.size === entries.length ? 0 : entries.length, enqueued: waiting.length - failed.size };
  };

  const sweepAll = async (): Promise<number> => {
    const cutoff = now() - (options.graceMs ?? 10_000);
    let enqueued = 0;
    for (let round = 0; round < maxBatches; round++) {
      const result = await sweepBatch(cutoff);
      enqueued += result.enqueued;
      if (result.seen < batch) break;
    }
    if (enqueued > 0) log.info({ enqueued }, 'turns enqueued for waiting messages');
    return enqueued;
  };
  return startPeriodic(sweepAll, {
    intervalMs: options.intervalMs ?? 30_000,
    atStart: options.sweepAtStart !== false,
    onDone: () => outage.available(),
    onError: (err) => outage.warn({ err }, 'pending sweep failed'),
  });
}
