import { approvalChoices, approvalPrompt, type ApprovalRecord } from '../src/core/approval.js';
import { answeredIds, type OutboundMessage } from '../src/core/inbound.js';
import type { ToolCall } from '../src/core/messages.js';
import { questionReplyId } from '../src/approvals/question-id.js';
import { DEFAULT_APPROVAL_TIMEOUT_MS } from '../src/approvals/store.js';
import type { RecordedRound } from '../src/redis/step-log.js';
import { gateRound, type Gate } from './approval-gate.js';
import { outbound, type Loop } from './turn-loop.js';

/** The round's calls at the approval gate (src/approvals); without an approval store every `ask` call is refused. */
export async function gateOf(loop: Loop, calls: readonly ToolCall[], recorded: RecordedRound | null): Promise<Gate> {
  const { deps, options, turn } = loop;
  return gateRound({ approvals: deps.approvals, tools: deps.tools, steps: loop.steps, log: loop.log }, {
    sessionId: turn.sessionId, turnId: loop.turnId, items: loop.items, calls, recorded,
    timeoutMs: options.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS, nowMs: Date.now(),
  });
}

/**
 * The round waits for the user: each open question goes out with its buttons, the turn's messages
 * stay in the processing list and the step log keeps the round, and the job ends (no worker slot,
 * no lease). The decision's inbox event (or the expiry) brings the turn back, on any worker.
 */
export async function park(loop: Loop, waiting: readonly ApprovalRecord[]): Promise<OutboundMessage[]> {
  // Each question names the turn's messages (and its decisions'): an API request takes it only when it is theirs,
  // and, answering with one message, takes all the round's questions (`questions`).
  const answers = answeredIds(loop.items);
  const outbox = waiting.map((record) => ({
    ...outbound(loop, questionReplyId(record), approvalPrompt(record), 'notice', true), choices: approvalChoices(record.id), questions: waiting.length, answers,
  }));
  await loop.turn.commitOnly({ outbox });
  loop.log.info({ approvals: waiting.map((record) => record.id) }, 'turn waits for approval');
  return outbox;
}
