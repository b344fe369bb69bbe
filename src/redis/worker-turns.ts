/**
 * Which turns each worker process runs, so a worker that dies mid-turn is recovered as soon as its
 * heartbeat lapses instead of when its session lease and queue lock run out. A worker records a turn
 * when it takes the session's lease and forgets it when the turn ends; a dead worker's record stays
 * until another process recovers it.
 */
import { StoredFormatError } from '../errors.js';
import type { RedisClient } from './client.js';
import { DEFAULT_KEY_PREFIX, workerTurnKeys } from './keys.js';

/** Format version of a stored {@link WorkerTurn}. */
const WORKER_TURN_FORMAT = 1;

/** One running turn of a worker, as recorded. */
export interface WorkerTurn {
  sessionId: string;
  /** The turn job's id and the BullMQ lock token its worker holds it with. */
  jobId: string;
  lockToken: string;
  /** The session lease's fencing token the turn runs under. */
  fence: number;
}

/** Records that worker `workerId` runs `turn`. */
export async function recordWorkerTurn(redis: RedisClient, workerId: string, turn: WorkerTurn, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<void> {
  await redis.hset(workerTurnKeys(workerId, keyPrefix).turns, turn.sessionId, JSON.stringify({ format: WORKER_TURN_FORMAT, ...turn }));
}

/** Forgets the turn of `sessionId` of worker `workerId` (it ended, or it was recovered). */
export async function forgetWorkerTurn(redis: RedisClient, workerId: string, sessionId: string, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<void> {
  await redis.hdel(workerTurnKeys(workerId, keyPrefix).turns, sessionId);
}

/** The turns worker `workerId` recorded and has not forgotten. @throws StoredFormatError for another format version. */
export async function readWorkerTurns(redis: RedisClient, workerId: string, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<WorkerTurn[]> {
  const raw = await redis.hgetall(workerTurnKeys(workerId, keyPrefix).turns);
  return Object.entries(raw).map(([sessionId, text]) => {
    const value = JSON.parse(text) as WorkerTurn & { format?: unknown };
    if (value.format !== WORKER_TURN_FORMAT) {
      throw new StoredFormatError(`the running turn of ${sessionId} of worker ${workerId}`, value.format, WORKER_TURN_FORMAT, 'run one chatgate version per key prefix');
    }
    const { format: _format, ...turn } = value;
    return turn;
  });
}

/** How many turns each of `workerIds` has recorded (each key in its own slot: one command each, sent together). */
export async function countWorkerTurns(redis: RedisClient, workerIds: readonly string[], keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<number[]> {
  return Promise.all(workerIds.map((id) => redis.hlen(workerTurnKeys(id, keyPrefix).turns)));
}

/**
 * Claims the recovery of dead worker `workerId` for `claimant` for `ttlMs` (one recoverer at a
 * time). @returns false when another process holds the claim.
 */
export async function claimWorkerRecovery(redis: RedisClient, workerId: string, claimant: string, ttlMs: number, keyPrefix: string = DEFAULT_KEY_PREFIX): Promise<boolean> {
  return (await redis.set(workerTurnKeys(workerId, keyPrefix).claim, claimant, 'PX', ttlMs, 'NX')) === 'OK';
}
