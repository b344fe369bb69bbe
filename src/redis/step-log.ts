/**
 * The durable step log of a running turn (DESIGN §5 "Effects"): its latest round — the model's
 * answer, the tool calls started and their results (with the references of the images they
 * returned) — recorded in Redis as each step completes, under the session's lease. A turn retried
 * after a crash reads it and resumes the round instead of asking the model again and running its
 * tools twice. The worker records rounds with tool calls; a final answer goes straight into the
 * turn's last commit (workers/agent.processor.ts).
 */
import type { AttachmentRef } from '../core/attachments.js';
import type { AssistantMessage } from '../core/messages.js';
import { StaleCommitError, StoredFormatError } from '../errors.js';
import type { RedisClient } from './client.js';
import type { SessionKeys } from './keys.js';
import { runScriptWithOptions } from './scripts.js';
import type { CallUsage } from '../core/models.js';

/** How long a step log outlives its last write, in ms (a day: a crashed turn is retried well before). */
const STEP_LOG_TTL_MS = 86_400_000;

/**
 * Format version of the step log this chatgate reads and writes (its `format` field): 2 records
 * each result as JSON with the call's image references. A log of another version is refused.
 */
export const STEP_LOG_FORMAT = 2;

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
  /** Tool call id → the images its result returned, stored as attachments (workers/tool-images.ts); absent: none. */
  images: Map<string, AttachmentRef[]>;
  /** Tool call ids whose run was started (side-effecting and approved tools only). */
  started: Set<string>;
  /** Tool call id → the id of the approval the user was asked for it (src/approvals). */
  approvals: Map<string, string>;
  /** The round was committed to the projection (written right after that commit). */
  committed: boolean;
}

/** The step log of one turn of one session. Every write is refused once the lease is lost. */
export interface StepLog {
  /** The turn's latest round, or null when the log holds none of this turn. @throws StoredFormatError when it is of another format version. */
  read(): Promise<RecordedRound | null>;
  /** Starts a new round with the model's answer (replacing the previous round). */
  recordAnswer(answer: RecordedAnswer): Promise<void>;
  /** Marks a side-effecting tool call as started, before it runs. */
  recordStarted(callId: string): Promise<void>;
  /** Records a tool call's result text and the references of the images it returned (default none), in one write. */
  recordResult(callId: string, text: string, images?: readonly AttachmentRef[]): Promise<void>;
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
    const opts = { fence: String(options.fence), turnId, field, newRound, format: STEP_LOG_FORMAT, ttlMs: options.ttlMs ?? STEP_LOG_TTL_MS };
    const reply = Number(await runScriptWithOptions(redis, 'recordStep', [keys.lease, keys.steps], opts, [value]));
    if (reply === -1) throw new StaleCommitError(sessionOf(keys), 'the session lease was lost before a step was recorded');
    if (reply !== 1) throw new StaleCommitError(sessionOf(keys), `the step log holds no round of turn ${turnId}`);
  };
  return {
    async read() {
      const raw = await redis.hgetall(keys.steps);
      if (raw.turn !== turnId || !raw.answer) return null;
      return toRound(checkedFormat(raw, keys));
    },
    recordAnswer: (answer) => write('answer', JSON.stringify(answer), true),
    recordStarted: (callId) => write(`started:${callId}`, '1'),
    recordResult: (callId, text, images = []) => write(`result:${callId}`, JSON.stringify({ text, images } satisfies StoredResult)),
    recordApproval: (callId, approvalId) => write(`approval:${callId}`, approvalId),
    recordCommitted: () => write('committed', '1'),
    async clear() {
      await redis.del(keys.steps);
    },
  };
}

/** A `result:<call id>` field. */
interface StoredResult {
  text: string;
  images: readonly AttachmentRef[];
}

/** @throws StoredFormatError when the log is of another format version than {@link STEP_LOG_FORMAT}. */
function checkedFormat(raw: Record<string, string>, keys: SessionKeys): Record<string, string> {
  if (raw.format === String(STEP_LOG_FORMAT)) return raw;
  throw new StoredFormatError(`the step log ${keys.steps}`, raw.format, STEP_LOG_FORMAT,
    'the chatgate version that wrote it must finish the turn, or delete the key to run the turn again from its last commit');
}

function toRound(raw: Record<string, string>): RecordedRound {
  const results = new Map<string, string>();
  const images = new Map<string, AttachmentRef[]>();
  const started = new Set<string>();
  const approvals = new Map<string, string>();
  for (const [field, value] of Object.entries(raw)) {
    if (field.startsWith('result:')) {
      const callId = field.slice('result:'.length);
      const result = JSON.parse(value) as StoredResult;
      results.set(callId, result.text);
      if (result.images.length > 0) images.set(callId, [...result.images]);
    } else if (field.startsWith('started:')) started.add(field.slice('started:'.length));
    else if (field.startsWith('approval:')) approvals.set(field.slice('approval:'.length), value);
  }
  return { answer: JSON.parse(raw.answer ?? 'null') as RecordedAnswer, results, images, started, approvals, committed: raw.committed === '1' };
}

/**
 * The approvals the session's recorded round asked for whose calls have no result yet (read
 * without knowing the turn: what a turn job checks before it takes the inbox). Empty when the
 * round was committed or asked nothing. @throws StoredFormatError for a log of another format version.
 */
export async function askedApprovalIds(redis: RedisClient, keys: SessionKeys): Promise<string[]> {
  const raw = await redis.hgetall(keys.steps);
  if (!raw.answer || checkedFormat(raw, keys).committed === '1') return [];
  return Object.entries(raw).filter(([field]) => field.startsWith('approval:') && raw[`result:${field.slice('approval:'.length)}`] === undefined).map(([, id]) => id);
}

function sessionOf(keys: SessionKeys): string {
  const match = /\{(.*)\}/.exec(keys.steps);
  return match?.[1] ?? keys.steps;
}
