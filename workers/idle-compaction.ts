/**
 * Compaction while nobody waits (layer `idle`): after a turn, a session whose next request is
 * expected over the in-loop line gets a delayed job on the turn queue; when it runs (the session
 * quiet for `idleCompactSeconds`) a worker compacts the session under its lease, like a turn.
 * A message arriving first wins: the job finds it waiting and does nothing, or, arriving during the
 * summary, makes the job give the lease back at once — its commit is then refused by the fence and
 * the compaction dropped (its summary, paid for, still counted); the message's turn compacts in the
 * loop as before, if it still needs to. The notice waits in the session for the next reply.
 */
import type { Job } from 'bullmq';
import type { ContextCompressor } from '../src/core/compaction/compressor.js';
import { automaticCompactionNotice } from '../src/core/compaction/compaction-text.js';
import { decideIdleCompaction } from '../src/core/compaction/idle.js';
import { StaleCommitError } from '../src/errors.js';
import type { Logger } from '../src/log.js';
import type { Metrics } from '../src/metrics.js';
import { turnDedupId, type TurnJobData } from '../src/queue/names.js';
import type { ShardedQueue } from '../src/queue/sharded.js';
import type { RedisClient } from '../src/redis/client.js';
import { holdLease } from '../src/redis/lease.js';
import { createSessionNotes } from '../src/redis/notes.js';
import { requestTokens, type SessionMeta, type SessionStore } from '../src/redis/session-store.js';
import type { PriceTable } from '../src/redis/usage.js';
import { runCompactionStep } from '../src/session/compaction-step.js';
import { TurnState } from '../src/session/turn-state.js';

/** The BullMQ job name of an idle compaction (on the turn queue). */
export const IDLE_COMPACTION_JOB = 'idle-compaction';

/** How often a running idle compaction looks for a message that arrived, ms. */
export const IDLE_YIELD_POLL_MS = 100;

/** What the idle compactions of one worker need. */
export interface IdleCompactionDeps {
  redis: RedisClient;
  store: SessionStore;
  compressor: ContextCompressor;
  queue: Pick<ShardedQueue<TurnJobData>, 'add'>;
  logger: Logger;
  metrics?: Metrics;
}

/** Options of the idle compactions. */
export interface IdleCompactionOptions {
  /** Quiet time before the compaction, seconds; 0: off. */
  idleSeconds: number;
  /** The in-loop trigger, share of (window − reserve). */
  threshold: number;
  contextWindow: number;
  reservedOutputTokens: number;
  systemPrompt: string;
  model: string;
  summaryModel: string;
  leaseTtlMs: number;
  prices?: PriceTable;
  /** Tell the user in one line, with the session's next reply. Default true. */
  compactionNotice?: boolean;
}

/** The idle compactions of one worker. */
export interface IdleCompactions {
  /**
   * After a turn committed: schedules the session's idle compaction when its next request (the
   * request now plus the turn's growth, `requestBeforeTurn` → now) is expected over the in-loop line.
   * Its summary counts for `user` (the turn's) and the chat, in the budgets as every model call.
   * `session` is the session as the turn's last commit left it (its lease still held: nothing else
   * changed it), so nothing is read back from Redis.
   */
  schedule(sessionId: string, requestBeforeTurn: number, session: CommittedSession, user?: string): Promise<void>;
  /** Runs an idle compaction job. Never throws: a failure is logged and the job ends. @returns what happened. */
  run(job: Job<TurnJobData>): Promise<string>;
}

/** A session as a turn's last commit left it: its meta and how many messages its projection holds. */
export interface CommittedSession {
  meta: SessionMeta;
  messageCount: number;
}

/** Creates the idle compactions of a worker. */
export function createIdleCompactions(deps: IdleCompactionDeps, options: IdleCompactionOptions): IdleCompactions {
  const log = deps.logger.child({ component: 'idle-compaction' });
  return {
    async schedule(sessionId, requestBeforeTurn, { meta, messageCount }, user) {
      if (options.idleSeconds <= 0) return;
      const now = requestTokens({ meta });
      const decision = decideIdleCompaction({ ...limits(meta, options), messageCount, requestTokens: now, expectedGrowthTokens: now - requestBeforeTurn, threshold: options.threshold });
      if (!decision.compact) return;
      const growth = decision.nextRequestTokens - now;
      // One job per session version: a later turn's commit makes this one find the session moved on.
      await deps.queue.add(IDLE_COMPACTION_JOB, { sessionId, idle: { version: meta.version, growthTokens: growth, ...(user !== undefined ? { user } : {}) } }, {
        jobId: `${turnDedupId(sessionId)}-idle-${meta.version}`, delay: options.idleSeconds * 1000, attempts: 1, removeOnComplete: 1000, removeOnFail: 1000,
      });
      log.debug({ sessionId, requestTokens: now, growthTokens: growth }, 'idle compaction scheduled');
    },
    async run(job) {
      const { sessionId, idle } = job.data;
      try {
        return await runIdle(deps, options, log.child({ sessionId, jobId: job.id }), { sessionId, user: idle?.user }, idle?.version ?? -1, idle?.growthTokens ?? 0);
      } catch (err) {
        log.warn({ err, sessionId }, 'idle compaction failed; the next turn compacts in the loop if it must');
        return 'failed';
      }
    },
  };
}

async function runIdle(deps: IdleCompactionDeps, options: IdleCompactionOptions, log: Logger, { sessionId, user }: { sessionId: string; user?: string }, version: number, growthTokens: number): Promise<string> {
  const keys = deps.store.keys(sessionId);
  if (await moved(deps.redis, keys, version)) return 'dropped: the session moved on';
  const lease = await holdLease(deps.redis, keys, options.leaseTtlMs);
  if (!lease) return 'dropped: the session is busy';
  let yielded = false;
  // A message arriving now wins: give the lease back at once (its turn takes it), drop this compaction.
  const watch = setInterval(() => {
    void deps.redis.llen(keys.inbox).then((waiting) => {
      if (waiting === 0 || yielded) return;
      yielded = true;
      log.info({}, 'idle compaction yields to a message');
      void lease.release();
    }, () => undefined);
  }, IDLE_YIELD_POLL_MS);
  try {
    const snapshot = await deps.store.load(sessionId);
    if (snapshot.meta.version !== version || (await moved(deps.redis, keys, version))) return 'dropped: the session moved on';
    // Its summary counts for the user of the turn that scheduled it, and the chat; the rollups name no user.
    const turn = new TurnState(deps.store, sessionId, snapshot, lease.fence, undefined, { chat: sessionId, ...(user ? { user } : {}) });
    const current = turn.requestTokens(snapshot.meta.overheadTokens);
    const nextRequest = current + growthTokens;
    if (!deps.compressor.shouldCompress(nextRequest, turn.compaction)) return 'nothing to do';
    const result = await runCompactionStep({
      compressor: deps.compressor, turn, system: { role: 'system', content: options.systemPrompt }, requestTokens: nextRequest, layer: 'idle', force: false,
      summaryModel: options.summaryModel, model: options.model, logger: log, prices: options.prices, metrics: deps.metrics, commitNoop: false,
      notes: () => createSessionNotes(deps.redis, keys).list(),
      // Nobody is reading the quiet chat now: the notice comes with the next reply.
      heldNotice: (done) => (options.compactionNotice === false ? null : automaticCompactionNotice({
        outcome: done.outcome, requestTokensBefore: done.requestTokensBefore - growthTokens, requestTokensAfter: done.requestTokensAfter - growthTokens,
      })),
    });
    return `compacted: ${result.outcome}`;
  } catch (err) {
    if (err instanceof StaleCommitError && yielded) return 'dropped: a message arrived first';
    throw err;
  } finally {
    clearInterval(watch);
    if (!yielded) await lease.release();
  }
}

/** Whether the session changed since the job was scheduled, or a message waits for it. */
async function moved(redis: RedisClient, keys: ReturnType<SessionStore['keys']>, version: number): Promise<boolean> {
  const [stored, inbox, processing] = await Promise.all([redis.hget(keys.meta, 'version'), redis.llen(keys.inbox), redis.llen(keys.processing)]);
  return Number(stored ?? 0) !== version || inbox > 0 || processing > 0;
}

function limits(meta: SessionMeta, options: IdleCompactionOptions): { contextWindow: number; reservedOutputTokens: number } {
  return { contextWindow: meta.limits?.contextWindow ?? options.contextWindow, reservedOutputTokens: meta.limits?.reservedOutputTokens ?? options.reservedOutputTokens };
}
