import type { AttachmentRef } from '../src/core/attachments.js';
import type { ToolCall } from '../src/core/messages.js';
import type { TokenCounter } from '../src/core/tokens.js';
import type { Logger } from '../src/log.js';
import type { RecordedRound, StepLog } from '../src/redis/step-log.js';
import type { Gate } from './approval-gate.js';
import { capToolResult } from './model-request.js';
import type { ToolRegistry } from './tools/registry.js';
import type { ToolContext, ToolImage } from './tools/types.js';

/** What running the tool calls of one round needs. */
export interface ToolRound {
  tools: ToolRegistry;
  steps: StepLog;
  log: Logger;
  /** The round as recorded before a crash, or null for a fresh round. */
  recorded: RecordedRound | null;
  /** Token cap of each result. */
  maxTokens: number;
  model?: string;
  /** Counts a result's tokens against `maxTokens`. */
  tokenCounter: TokenCounter;
  /** The context of one call (its idempotency key included). */
  context(callId: string): Omit<ToolContext, 'signal'>;
  /** Called before each call that runs (a lost lease aborts the round). */
  beforeRun(call: ToolCall): Promise<void>;
  /** The turn's `/stop` signal: tools see it, and a stopped call's result is never recorded. */
  signal?: AbortSignal;
  /** The round at the approval gate: calls refused (denied, expired) and calls approved. Absent: no call asks. */
  gate?: Pick<Gate, 'refusals' | 'approved'>;
  /** Stores the images a call returned (workers/tool-images.ts). Absent: the requests cannot show images, they are dropped. */
  storeImages?(callId: string, images: readonly ToolImage[]): Promise<AttachmentRef[]>;
}

/** One call's outcome in the round: its result text and the references of the images it returned. */
export interface CallOutcome {
  text: string;
  images: AttachmentRef[];
}

/** The result a side-effecting call gets when a crash left its outcome unknown. */
function unknownOutcomeResult(name: string, idempotencyKey: string): string {
  return `Error: the outcome of this ${name} call is unknown: the worker running it stopped before its result was recorded. `
    + `It may or may not have taken effect, and it was not run again. Check its effect before calling it again (idempotency key ${idempotencyKey}).`;
}

/**
 * The outcome of one tool call of the round: the recorded one when the call completed before a
 * crash (its images' references too); a refused call's (denied or expired at the approval gate) without running it; for a side-effecting call that was started but not recorded, a result saying its outcome
 * is unknown (never a second run); else the call runs now, its images stored. Every outcome is recorded as it completes.
 */
export async function runToolCall(round: ToolRound, call: ToolCall): Promise<CallOutcome> {
  const done = round.recorded?.results.get(call.id);
  if (done !== undefined) return { text: done, images: round.recorded?.images.get(call.id) ?? [] };
  const name = call.function.name;
  const refused = round.gate?.refusals.get(call.id);
  if (refused !== undefined) {
    await round.steps.recordResult(call.id, refused);
    return { text: refused, images: [] };
  }
  // An approved call runs once, like a side-effecting one: its start is recorded before it runs.
  const sideEffects = round.tools.hasSideEffects(name) || round.gate?.approved.has(call.id) === true;
  const context = round.context(call.id);
  if (sideEffects && round.recorded?.started.has(call.id)) {
    round.log.warn({ tool: name, callId: call.id, idempotencyKey: context.idempotencyKey }, 'side-effecting tool call of a crashed turn not run again: its outcome is unknown');
    const text = unknownOutcomeResult(name, context.idempotencyKey);
    await round.steps.recordResult(call.id, text);
    return { text, images: [] };
  }
  await round.beforeRun(call);
  if (sideEffects) await round.steps.recordStarted(call.id);
  const result = await round.tools.execute(call, context, round.signal);
  round.signal?.throwIfAborted();
  const text = capToolResult(result.text, round.maxTokens, round.tokenCounter, round.model);
  // Stored before the result is recorded: a recorded reference always has its bytes.
  const images = result.images.length > 0 && round.storeImages ? await round.storeImages(call.id, result.images) : [];
  await round.steps.recordResult(call.id, text, images);
  return { text, images };
}
