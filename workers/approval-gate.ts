import { APPROVAL_RECORD_VERSION, notApprovedResult, type ApprovalRecord } from '../src/core/approval.js';
import { truncateText } from '../src/core/text.js';
import type { InboundMessage } from '../src/core/inbound.js';
import type { ToolCall } from '../src/core/messages.js';
import type { Logger } from '../src/log.js';
import { newApprovalId, type ApprovalStore } from '../src/approvals/store.js';
import type { RecordedRound, StepLog } from '../src/redis/step-log.js';
import type { ToolRegistry } from './tools/registry.js';

/** Longest stored copy of a call's arguments in an approval record, in code points. */
const STORED_ARGS_MAX = 4000;

/** What the approval gate of a round needs. */
export interface ApprovalGateDeps {
  /** Absent: no one can be asked, and every `ask` call is refused. */
  approvals?: ApprovalStore;
  tools: ToolRegistry;
  steps: StepLog;
  log: Logger;
}

/** One round at the gate. */
export interface GateInput {
  sessionId: string;
  turnId: string;
  /** The turn's messages: the first one's sender may decide in groups; the last one's chat is asked. */
  items: readonly InboundMessage[];
  calls: readonly ToolCall[];
  recorded: RecordedRound | null;
  timeoutMs: number;
  nowMs: number;
}

/** Where a round's calls stand. */
export interface Gate {
  /** Calls that must not run, with the result the model gets instead. */
  refusals: Map<string, string>;
  /** Calls the user approved (or a grant covers): they run once, their start recorded first. */
  approved: Set<string>;
  /** Questions still open: the turn waits for them (holding nothing). */
  waiting: ApprovalRecord[];
}

/**
 * Looks at every `ask` call of a round that has no result yet: a grant of its tool lets it run; a
 * call asked before (its approval id in the step log) stands as decided — approved, denied,
 * expired (expired here when past its time, by the same script as every decision) or still
 * waiting; any other call gets a new question (its id recorded in the step log before the record
 * is written, so a crashed run asks with the same id).
 */
export async function gateRound(deps: ApprovalGateDeps, input: GateInput): Promise<Gate> {
  const gate: Gate = { refusals: new Map(), approved: new Set(), waiting: [] };
  const { approvals } = deps;
  for (const call of input.calls) {
    if (input.recorded?.results.has(call.id) || deps.tools.approvalOf(call.function.name) !== 'ask') continue;
    if (!approvals) {
      gate.refusals.set(call.id, `Error: ${call.function.name} needs the user's approval, and this worker cannot ask for it; it was not run.`);
      continue;
    }
    const record = await recordOf({ ...deps, approvals }, input, call);
    if (record === 'granted') {
      gate.approved.add(call.id);
      continue;
    }
    const decided = record.state === 'pending' && input.nowMs >= record.expiresAtMs ? await expire(approvals, record) : record;
    if (decided.state === 'pending') gate.waiting.push(decided);
    else if (decided.state === 'approved') gate.approved.add(call.id);
    else gate.refusals.set(call.id, notApprovedResult(decided));
  }
  return gate;
}

async function recordOf(deps: ApprovalGateDeps & { approvals: ApprovalStore }, input: GateInput, call: ToolCall): Promise<ApprovalRecord | 'granted'> {
  const asked = input.recorded?.approvals.get(call.id);
  if (asked !== undefined) {
    const [stored] = await deps.approvals.read(input.sessionId, [asked]);
    if (stored) return stored;
    // The run that asked died between recording the id and writing the record: write it now.
    const record = newRecord(input, call, asked);
    await deps.approvals.create(record);
    return record;
  }
  if (await deps.approvals.isGranted(input.sessionId, call.function.name)) return 'granted';
  const record = newRecord(input, call, newApprovalId());
  await deps.steps.recordApproval(call.id, record.id);
  await deps.approvals.create(record);
  deps.log.info({ approvalId: record.id, tool: record.tool, callId: call.id }, 'tool call waits for approval');
  return record;
}

async function expire(approvals: ApprovalStore, record: ApprovalRecord): Promise<ApprovalRecord> {
  const result = await approvals.decide(record.sessionId, record.id, { decision: 'expired', via: 'timeout' });
  return result.outcome === 'unknown' ? record : result.record;
}

function newRecord(input: GateInput, call: ToolCall, id: string): ApprovalRecord {
  const first = input.items[0]!;
  const last = input.items[input.items.length - 1]!;
  const args = call.function.arguments;
  return {
    v: APPROVAL_RECORD_VERSION, id, sessionId: input.sessionId, turnId: input.turnId, callId: call.id, tool: call.function.name,
    args: args.length > STORED_ARGS_MAX ? `${truncateText(args, STORED_ARGS_MAX)}…` : args,
    route: { channel: last.channel, chatId: last.chatId, ...(last.threadId ? { threadId: last.threadId } : {}) },
    askedBy: { userId: first.userId, userName: first.userName }, chatType: last.chatType ?? 'private',
    askedAtMs: input.nowMs, expiresAtMs: input.nowMs + input.timeoutMs, state: 'pending', version: 1,
  };
}
