/**
 * The durable step log of a running turn (DESIGN §5 "Effects"): its latest round — the model's
 * answer, the tool calls started and their results — recorded in Redis as each step completes,
 * under the session's lease. A turn retried after a crash reads it and resumes the round instead
 * of asking the model again and running its tools twice. The worker records rounds with tool calls;
 * a final answer goes straight into the turn's last commit (workers/agent.processor.ts).
 */
import type { AssistantMessage } from '../core/messages.js';
import { StaleCommitError } from '../errors.js';
import type { RedisClient } from './client.js';
import type { SessionKeys } from './keys.js';
import { runScriptWithOptions } from './scripts.js';
import type { CallUsage } from '../core/models.js';

/** How long a step log outlives its last write, in ms (a day: a crashed turn is retried well before). */
const STEP_LOG_TTL_MS = 86_400_000;

/** A model answer as recorded: what {@link StepLog.recordAnswer} was given. */
export interface RecordedAnswer {
  message: AssistantMessage;
  usage: CallUsage | null;
  finishReason: string | null;
  model: string;
}

/** The latest round of a turn as recorded. */
export interface RecordedRound {
  answer: RecordedAnswer;
  /** Tool call id → its result text. */
  results: Map<string, string>;
  /** Tool call ids whose run was started (side-effecting and approved tools only). */
  started: Set<string>;
  /** Tool call id → the id of the approval the user was asked for it (src/approvals). */
  approvals: Map<string, string>;
  /** The round was committed to the projection (written right after that commit). */
  committed: boolean;
}

/** The step log of one turn of one session. Every write is refused once the lease is lost. */
export interface StepLog {
  /** The turn's latest round, or null when the log holds none of this turn. */
  read(): Promise<RecordedRound | null>;
  /** Starts a new round with the model's answer (replacing the previous round). */
  recordAnswer(answer: RecordedAnswer): Promise<void>;
  /** Marks a side-effecting tool call as started, before it runs. */
  recordStarted(callId: string): Promise<void>;
  /** Records a tool call's result text. */
  recordResult(callId: string, text: string): Promise<void>;
  /** Records the approval the user is asked for a tool call (before it is created: a retry asks with the same id). */
  recordApproval(callId: string, approvalId: string): Promise<void>;
  /** Marks the round as committed to the projection. */
  recordCommitted(): Promise<void>;
  /** Deletes the log (the turn is over). */
  clear(): Promise<void>;
}

/** Where a turn's step log lives and who may write it. */
export interface StepLogOptions {
  keys: SessionKeys;
  /** The turn's identity: stable across its retries (the id of its first message). */
  turnId: string;
  /** Fencing token of the lease the writer holds. */
  fence: number;
  /** Default {@link STEP_LOG_TTL_MS}. */
  ttlMs?: number;
}

/** The step log of one turn in Redis (`keys.steps`). */
export function createStepLog(redis: RedisClient, options: StepLogOptions): StepLog {
  const { keys, turnId } = options;
  const write = async (field: string, value: string, newRound = false): Promise<void> => {
    const opts = { fence: String(options.fence), turnId, field, newRound, ttlMs: options.ttlMs ?? STEP_LOG_TTL_MS };
    const reply = Number(await runScriptWithOptions(redis, 'recordStep', [keys.lease, keys.steps], opts, [value]));
    if (reply === -1) throw new StaleCommitError(sessionOf(keys), 'the session lease was lost before a step was recorded');
    if (reply !== 1) throw new StaleCommitError(sessionOf(keys), `the step log holds no round of turn ${turnId}`);
  };
  return {
    async read() {
      const raw = await redis.hgetall(keys.steps);
      if (raw.turn !== turnId || !raw.answer) return null;
      return toRound(raw);
    },
    recordAnswer: (answer) => write('answer', JSON.stringify(answer), true),
    recordStarted: (callId) => write(`started:${callId}`, '1'),
    recordResult: (callId, text) => write(`result:${callId}`, text),
    recordApproval: (callId, approvalId) => write(`approval:${callId}`, approvalId),
    recordCommitted: () => write('committed', '1'),
    async clear() {
      await redis.del(keys.steps);
    },
  };
}

function toRound(raw: Record<string, string>): RecordedRound {
  const results = new Map<string, string>();
  const started = new Set<string>();
  const approvals = new Map<string, string>();
  for (const [field, value] of Object.entries(raw)) {
    if (field.startsWith('result:')) results.set(field.slice('result:'.length), value);
    else if (field.startsWith('started:')) started.add(field.slice('started:'.length));
    else if (field.startsWith('approval:')) approvals.set(field.slice('approval:'.length), value);
  }
  return { answer: JSON.parse(raw.answer ?? 'null') as RecordedAnswer, results, started, approvals, committed: raw.committed === '1' };
}

/**
 * The approvals the session's recorded round asked for whose calls have no result yet (read
 * without knowing the turn: what a turn job checks before it takes the inbox). Empty when the
 * round was committed or asked nothing.
 */
export async function askedApprovalIds(redis: RedisClient, keys: SessionKeys): Promise<string[]> {
  const raw = await redis.hgetall(keys.steps);
  if (!raw.answer || raw.committed === '1') return [];
  return Object.entries(raw).filter(([field]) => field.startsWith('approval:') && raw[`result:${field.slice('approval:'.length)}`] === undefined).map(([, id]) => id);
}

function sessionOf(keys: SessionKeys): string {
  const match = /\{(.*)\}/.exec(keys.steps);
  return match?.[1] ?? keys.steps;
}
