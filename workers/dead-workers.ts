/**
 * Recovers the turns of a worker that died mid-turn as soon as its heartbeat lapses: its session
 * leases are released (fenced: a late write of the dead worker is refused) and its turn jobs moved
 * back to waiting under the lock token it held, so a live worker resumes them at once — instead of
 * after the lease's TTL and the queue's stalled check (about a minute). One process recovers a
 * dead worker at a time (a short claim); the others skip it.
 */
import { Job } from 'bullmq';
import type { Logger } from '../src/log.js';
import { startPeriodic, type Periodic } from '../src/periodic.js';
import type { TurnJobData } from '../src/queue/names.js';
import type { ShardedQueue } from '../src/queue/sharded.js';
import type { RedisClient } from '../src/redis/client.js';
import { readHeartbeats, type HeartbeatStatus } from '../src/redis/heartbeats.js';
import { sessionKeys } from '../src/redis/keys.js';
import { releaseLease } from '../src/redis/lease.js';
import { claimWorkerRecovery, countWorkerTurns, forgetWorkerTurn, readWorkerTurns, type WorkerTurn } from '../src/redis/worker-turns.js';

/** Default interval between two looks for dead workers, ms. */
export const DEAD_WORKER_CHECK_MS = 2_000;
/** How long one process holds the recovery of a dead worker, ms. */
const CLAIM_MS = 30_000;

/** Options of {@link startDeadWorkerRecovery}. */
export interface DeadWorkerRecoveryOptions {
  keyPrefix: string;
  /** The recovering process's heartbeat id (never recovers itself). */
  selfId: string;
  /** Interval between two looks, ms. Default {@link DEAD_WORKER_CHECK_MS}. */
  intervalMs?: number;
  /**
   * A turn job started this many times is not recovered again (a turn that kills its worker each
   * time): BullMQ's stalled check fails it in the end. Default 5.
   */
  maxStarts?: number;
}

/** Looks for dead workers with recorded turns every `intervalMs`, and recovers them. */
export function startDeadWorkerRecovery(deps: { redis: RedisClient; logger: Logger; queue: ShardedQueue<TurnJobData> }, options: DeadWorkerRecoveryOptions): Periodic<number> {
  const log = deps.logger.child({ component: 'dead-workers' });
  const checkAll = async (stopping: AbortSignal): Promise<number> => {
    // A worker of another chatgate version is not ours to recover (its turns' records may be of another format too).
    const dead = (await readHeartbeats(deps.redis, { keyPrefix: options.keyPrefix })).processes.filter((beat) => beat.role === 'worker' && !beat.alive && beat.id !== options.selfId);
    const counts = await countWorkerTurns(deps.redis, dead.map((beat) => beat.id), options.keyPrefix);
    let recovered = 0;
    for (const [k, beat] of dead.entries()) {
      if (counts[k]! === 0 || stopping.aborted) continue;
      if (!(await claimWorkerRecovery(deps.redis, beat.id, options.selfId, CLAIM_MS, options.keyPrefix))) continue;
      recovered += await recoverWorker(deps, log, beat, options);
    }
    return recovered;
  };
  return startPeriodic(checkAll, {
    intervalMs: options.intervalMs ?? DEAD_WORKER_CHECK_MS,
    onError: (err) => log.warn({ err }, 'dead worker check failed; the next one tries again'),
  });
}

/** Recovers every recorded turn of dead worker `beat`. @returns how many were put back. */
async function recoverWorker(deps: { redis: RedisClient; queue: ShardedQueue<TurnJobData> }, log: Logger, beat: HeartbeatStatus, options: DeadWorkerRecoveryOptions): Promise<number> {
  const turns = await readWorkerTurns(deps.redis, beat.id, options.keyPrefix);
  log.warn({ worker: beat.id, workerHost: beat.host, workerPid: beat.pid, turns: turns.length, silentMs: Date.now() - beat.beatAt }, 'worker stopped beating; recovering its turns');
  let recovered = 0;
  for (const turn of turns) {
    if (await recoverTurn(deps, log.child({ sessionId: turn.sessionId, jobId: turn.jobId, worker: beat.id }), turn, options)) recovered += 1;
    await forgetWorkerTurn(deps.redis, beat.id, turn.sessionId, options.keyPrefix);
  }
  return recovered;
}

/**
 * Releases the dead turn's session lease if it still holds it, and moves its job back to waiting
 * with the lock token the dead worker held (refused when the job already moved on: finished, or
 * put back by BullMQ's stalled check). @returns whether the job was put back.
 */
async function recoverTurn(deps: { redis: RedisClient; queue: ShardedQueue<TurnJobData> }, log: Logger, turn: WorkerTurn, options: DeadWorkerRecoveryOptions): Promise<boolean> {
  const job = await Job.fromId<TurnJobData>(deps.queue.forSession(turn.sessionId), turn.jobId);
  if (!job) return false;
  if (job.attemptsStarted >= (options.maxStarts ?? 5)) {
    log.warn({ starts: job.attemptsStarted }, 'turn of a dead worker left to the stalled check: it was started too often');
    return false;
  }
  await releaseLease(deps.redis, sessionKeys(turn.sessionId, options.keyPrefix), turn.fence);
  try {
    await job.moveToWait(turn.lockToken);
  } catch (err) {
    log.debug({ err }, 'turn of a dead worker already moved on');
    return false;
  }
  log.info({}, 'turn of a dead worker put back for another worker');
  return true;
}
