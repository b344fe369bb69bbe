import type { Logger } from '../log.js';
import { startPeriodic, type Periodic } from '../periodic.js';
import type { RedisClient } from '../redis/client.js';
import { readHeartbeats } from '../redis/heartbeats.js';

/** How long no worker may be alive before the gateway warns, ms. */
export const NO_WORKER_WARN_AFTER_MS = 60_000;
/** Default interval between two looks at the workers' heartbeats, ms. */
const CHECK_MS = 5_000;

/** Options of {@link startWorkerWatch}. */
export interface WorkerWatchOptions {
  keyPrefix: string;
  /** Warn once no worker has been alive this long, ms. Default {@link NO_WORKER_WARN_AFTER_MS}. */
  warnAfterMs?: number;
  /** Interval between two looks, ms. Default 5000; 0: no timer (the caller calls `run`). */
  intervalMs?: number;
  /** ms since epoch. Default `Date.now`. */
  now?: () => number;
}

/**
 * Watches the workers' heartbeats from the gateway: one warning `no worker alive` once none has
 * been alive for `warnAfterMs` (messages wait in the queue meanwhile), and one info line `a worker
 * is alive again` when one is back after that warning. A failed read is left to the next look.
 */
export function startWorkerWatch(deps: { redis: RedisClient; logger: Logger }, options: WorkerWatchOptions): Periodic<void> {
  const log = deps.logger.child({ component: 'worker-watch' });
  const now = options.now ?? Date.now;
  const warnAfterMs = options.warnAfterMs ?? NO_WORKER_WARN_AFTER_MS;
  let noneSince: number | undefined;
  let warned = false;
  const look = async (): Promise<void> => {
    const workers = (await readHeartbeats(deps.redis, { keyPrefix: options.keyPrefix, now })).processes.filter((beat) => beat.role === 'worker');
    const at = now();
    const alive = workers.filter((beat) => beat.alive);
    if (alive.length > 0) {
      if (warned) log.info({ workers: alive.length, noWorkerForMs: at - noneSince! }, 'a worker is alive again: queued messages are answered');
      noneSince = undefined;
      warned = false;
      return;
    }
    noneSince ??= at;
    if (warned || at - noneSince < warnAfterMs) return;
    warned = true;
    const last = workers[0];
    log.warn({ noWorkerForMs: at - noneSince, ...(last ? { lastWorker: { host: last.host, pid: last.pid, lastBeatAt: new Date(last.beatAt).toISOString() } } : {}) }, 'no worker alive: messages wait in the queue until one starts');
  };
  return startPeriodic(look, { intervalMs: options.intervalMs ?? CHECK_MS, onError: (err) => log.debug({ err }, 'worker heartbeats not read') });
}
