import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError, type Job } from 'bullmq';
import { awaitsDecision } from '../src/core/approval.js';
import type { InboundMessage } from '../src/core/inbound.js';
import { StaleCommitError } from '../src/errors.js';
import type { Logger } from '../src/log.js';
import { NOOP_METRICS } from '../src/metrics.js';
import type { TurnJobData } from '../src/queue/names.js';
import { enqueueOutbound, type OutboundSink } from '../src/outbound/outbound-queue.js';
import { TURN_SIGNALS, type TurnSignal } from '../src/queue/signals.js';
import type { RedisClient } from '../src/redis/client.js';
import { claimInbox } from '../src/redis/inbox.js';
import type { SessionKeys } from '../src/redis/keys.js';
import { holdLease, type HeldLease } from '../src/redis/lease.js';
import { requestTokens, type SessionStore } from '../src/redis/session-store.js';
import { IDLE_COMPACTION_JOB, type IdleCompactions } from './idle-compaction.js';
import { forgetWorkerTurn, recordWorkerTurn } from '../src/redis/worker-turns.js';
import { runAgentTurn, type AgentDeps, type AgentOptions } from './agent.processor.js';
import { deadLetterTurn } from './dead-letter.js';
import type { TurnStops } from './turn-stop.js';
import { askedApprovalIds } from '../src/redis/step-log.js';

/** What a turn job needs, shared by every job of one worker. */
export interface TurnRunner {
  redis: RedisClient;
  store: SessionStore;
  outbound: OutboundSink;
  logger: Logger;
  keyPrefix: string;
  agentOptions: AgentOptions;
  leaseTtlMs: number;
  leaseRetryMs: number;
  deps: AgentDeps;
  /** Jobs whose final failure the processor already dead-lettered (the 'failed' handler skips them). */
  deadLettered: Set<string>;
  /** Set by close(): the 'failed' handler stops waiting for a lease. */
  closing: boolean;
  /** Where running turns are watched for `/stop`; absent: turns cannot be stopped. */
  stops?: TurnStops;
  /** This worker's heartbeat id: its running turns are recorded under it, for recovery if it dies. Absent: not recorded. */
  workerId?: string;
  /** Compaction while nobody waits: scheduled after each turn, run as jobs of the turn queue. Absent: off. */
  idle?: IdleCompactions;
}

interface RunningTurn {
  job: Job<TurnJobData>;
  log: Logger;
  lease: HeldLease;
  items: InboundMessage[];
  typing: () => void;
  signal?: AbortSignal;
}

/** One turn job: lease, outbox left from a crash, inbox → processing, tool loop, replies out. */
export async function processTurnJob(runner: TurnRunner, job: Job<TurnJobData>, token?: string): Promise<string> {
  if (job.name === IDLE_COMPACTION_JOB) return runner.idle ? runner.idle.run(job) : 'idle compaction off';
  const { sessionId } = job.data;
  const keys = runner.store.keys(sessionId);
  const asked = performance.now();
  const held = await holdLease(runner.redis, keys, runner.leaseTtlMs);
  if (!held) return retryLater(runner, job, token);
  const lease = recentlyConfirmed(held, runner.leaseTtlMs, asked);
  let signal: ((type: TurnSignal['type']) => void) | null = null;
  let watch: ReturnType<TurnStops['watch']> | undefined;
  const recorded = runner.workerId !== undefined && job.id !== undefined && token !== undefined;
  try {
    if (recorded) await recordWorkerTurn(runner.redis, runner.workerId!, { sessionId, jobId: job.id!, lockToken: token!, fence: lease.fence }, runner.keyPrefix);
    await flushOutbox(runner, sessionId);
    const log = turnLogger(runner.logger, job);
    // A turn waiting for the user's decision: messages wait in the inbox as behind a running turn.
    if (await waitsForDecision(runner, sessionId, keys)) return 'waiting for approval';
    const items = await claimInbox(runner.redis, keys, log);
    if (items.length === 0) return 'empty';
    signal = (type) => void TURN_SIGNALS.publish(runner.redis, toSignal(type, sessionId, items), runner.keyPrefix).catch(() => undefined);
    signal('turn-started');
    const typing = signal;
    watch = runner.stops?.watch(sessionId, keys, lease.fence, items[0]!.id);
    const outcome = await runTurn(runner, { job, log, lease, items, typing: () => typing('typing'), signal: watch?.signal });
    // Not a failure: the new lease holder takes the messages; this job looks again later, attempts untouched.
    if (outcome === 'lease-lost') return await retryLater(runner, job, token);
    await flushOutbox(runner, sessionId);
    return `answered ${items.length}`;
  } finally {
    // Sent on failure too, so the gateway never keeps "typing" for a turn that died.
    watch?.dispose();
    signal?.('turn-ended');
    if (recorded) await forgetWorkerTurn(runner.redis, runner.workerId!, sessionId, runner.keyPrefix).catch(() => undefined);
    await lease.release();
  }
}

/**
 * How long a turn waits for a decision's inbox event after the decision was stored (src/approvals/decide.ts
 * stores it, then submits the event): the resumed turn must take the event, since the event names the
 * message that decided, which the turn's answer goes to (OutgoingText.answers). Past this, a gateway
 * that died in between is given up on and the next message resumes the turn without it.
 */
const DECISION_EVENT_WAIT_MS = 30_000;

/**
 * Whether the session's turn asked the user about a call that is still undecided and not yet expired,
 * or decided so recently that the decision's event is not in the inbox yet.
 */
async function waitsForDecision(runner: TurnRunner, sessionId: string, keys: SessionKeys): Promise<boolean> {
  const approvals = runner.deps.approvals;
  if (!approvals) return false;
  const ids = await askedApprovalIds(runner.redis, keys);
  if (ids.length === 0) return false;
  const now = Date.now();
  const records = await approvals.read(sessionId, ids);
  if (records.some((record) => record !== null && awaitsDecision(record, now))) return true;
  const justDecided = records.flatMap((record) => (record && record.state !== 'pending' && record.decidedAtMs !== undefined && now - record.decidedAtMs < DECISION_EVENT_WAIT_MS ? [`approval:${record.id}`] : []));
  if (justDecided.length === 0) return false;
  const queued = (await Promise.all([runner.redis.lrange(keys.inbox, 0, -1), runner.redis.lrange(keys.processing, 0, -1)])).flat();
  const arrived = new Set(queued.map(idOf));
  return justDecided.some((id) => !arrived.has(id));
}

/** The id of a stored inbox item (undefined for a malformed one: the inbox claim sets it aside). */
function idOf(item: string): string | undefined {
  try {
    return (JSON.parse(item) as Partial<Pick<InboundMessage, 'id'>>).id;
  } catch {
    return undefined;
  }
}

/**
 * Runs the tool loop. A lost lease ends the turn quietly ('lease-lost'); any other failure is
 * rethrown for BullMQ to retry — on the job's last attempt after dead-lettering its messages.
 */
async function runTurn(runner: TurnRunner, turn: RunningTurn): Promise<'ok' | 'lease-lost'> {
  const { job, log, lease, items } = turn;
  const startedMs = Date.now();
  const stopTimer = ({ outcome }: { outcome: 'ok' | 'error' | 'lease-lost' }) =>
    (runner.deps.metrics ?? NOOP_METRICS).record({ type: 'turn', channel: items[0]!.channel, outcome, durationMs: Date.now() - startedMs });
  try {
    const snapshot = await runner.store.load(job.data.sessionId);
    const requestBefore = requestTokens(snapshot);
    const { session } = await runAgentTurn({ ...runner.deps, logger: log, onModelCall: turn.typing }, runner.agentOptions, { snapshot, fence: lease.fence, lease, items, signal: turn.signal });
    stopTimer({ outcome: 'ok' });
    const last = items[items.length - 1]!;
    await runner.idle?.schedule(job.data.sessionId, requestBefore, session, `${last.channel}:${last.userId}`).catch((err: unknown) => log.warn({ err }, 'idle compaction not scheduled'));
    return 'ok';
  } catch (err) {
    if (err instanceof StaleCommitError) {
      stopTimer({ outcome: 'lease-lost' });
      log.warn({ err, messages: items.length }, 'turn aborted: the session lease was lost');
      return 'lease-lost';
    }
    stopTimer({ outcome: 'error' });
    if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
      await deadLetterTurn({ redis: runner.redis, logger: log }, { sessionId: job.data.sessionId, keys: runner.store.keys(job.data.sessionId), fence: lease.fence, jobId: job.id, err });
      await flushOutbox(runner, job.data.sessionId);
      if (job.id) runner.deadLettered.add(job.id);
    }
    throw err;
  }
}

/**
 * The 'failed' handler: logs every failed attempt; on a final failure the processor did not
 * handle (a job stalled too often is failed without running it), dead-letters the session's
 * processing list under the lease — unless a running turn holds the session and takes it anyway.
 */
export async function onTurnFailed(runner: TurnRunner, job: Job<TurnJobData>, err: Error): Promise<void> {
  const log = turnLogger(runner.logger, job);
  // An idle compaction holds no messages: nothing to set aside.
  if (job.name === IDLE_COMPACTION_JOB) return;
  const final = err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
  log.warn({ err, attemptsMade: job.attemptsMade, final }, 'turn job failed');
  if (!final || (job.id !== undefined && runner.deadLettered.delete(job.id))) return;
  const { sessionId } = job.data;
  const keys = runner.store.keys(sessionId);
  const lease = await leaseForDeadLetter(runner, keys);
  if (!lease) {
    log.warn({}, 'dead letter skipped: a running turn holds the session and takes its messages');
    return;
  }
  try {
    await deadLetterTurn({ redis: runner.redis, logger: log }, { sessionId, keys, fence: lease.fence, jobId: job.id, err });
    await flushOutbox(runner, sessionId);
  } finally {
    await lease.release();
  }
}

/**
 * The session's lease for dead-lettering, waiting up to one lease TTL: a dead worker's lease
 * expires by then, while a live turn keeps renewing it (and takes the processing list itself).
 */
async function leaseForDeadLetter(runner: TurnRunner, keys: SessionKeys): Promise<HeldLease | null> {
  const deadline = Date.now() + runner.leaseTtlMs;
  for (;;) {
    const lease = await holdLease(runner.redis, keys, runner.leaseTtlMs);
    if (lease || Date.now() >= deadline || runner.closing) return lease;
    await sleep(runner.leaseRetryMs);
  }
}

/**
 * `lease` whose `confirm()` does not ask Redis again within a tenth of its TTL after it was last
 * taken or renewed (measured from when that was asked): only expiry takes a session's lease from
 * its holder, so it is still held then — the first model call of a short turn goes without a
 * round trip. (Were it lost anyway, the fenced commits would refuse what the turn did.)
 */
function recentlyConfirmed(lease: HeldLease, ttlMs: number, askedAtMs: number): HeldLease {
  let confirmedAt = askedAtMs;
  return {
    fence: lease.fence,
    get lost() { return lease.lost; },
    async confirm() {
      if (!lease.lost && performance.now() - confirmedAt < ttlMs / 10) return true;
      const asked = performance.now();
      const held = await lease.confirm();
      if (held) confirmedAt = asked;
      return held;
    },
    release: () => lease.release(),
  };
}

/** Puts the job back for `leaseRetryMs` without spending an attempt. */
async function retryLater(runner: TurnRunner, job: Job<TurnJobData>, token?: string): Promise<never> {
  await job.moveToDelayed(Date.now() + runner.leaseRetryMs, token);
  throw new DelayedError();
}

/** The logger of one turn job: `sessionId`, `channel` and `jobId` bound (docs/design.md §6). */
function turnLogger(logger: Logger, job: Job<TurnJobData>): Logger {
  const { sessionId } = job.data;
  // Session ids are `channel:chatId[:threadId]` (sessionKeyOf).
  const channel = sessionId.includes(':') ? sessionId.slice(0, sessionId.indexOf(':')) : 'unknown';
  return logger.child({ sessionId, channel, jobId: job.id });
}

/** Enqueues committed replies (stable job ids: re-adding one that exists is a no-op), then drops them. */
async function flushOutbox(runner: TurnRunner, sessionId: string): Promise<void> {
  const pending = await runner.store.readOutbox(sessionId);
  for (const message of pending) await enqueueOutbound(runner.outbound, message);
  await runner.store.clearOutbox(sessionId, pending.length);
}

function toSignal(type: TurnSignal['type'], sessionId: string, items: InboundMessage[]): TurnSignal {
  const last = items[items.length - 1]!;
  return { type, sessionId, channel: last.channel, chatId: last.chatId, ...(last.threadId ? { threadId: last.threadId } : {}), atMs: Date.now() };
}
