/**
 * The chat commands of approvals: `/approve <id> [always]`, `/approve all`, `/deny <id>`, `/deny all`
 * (a button press arrives as the same command), `/revoke <tool>`, and the denial of what is pending
 * that `/stop` and `/reset` add. In groups only the user whose message started the turn, or an operator-listed
 * admin, may decide.
 */
import { approvalPrompt, awaitsDecision, decisionLine, parseDecisionTarget, type ApprovalRecord } from '../core/approval.js';
import type { ChatCommand } from '../core/commands.js';
import type { InboundMessage } from '../core/inbound.js';
import { decideAndWake, type ApprovalDeps } from '../approvals/decide.js';

/** What the approval commands need: deciding (store and wake-up) and the operator's admins. */
export interface ApprovalCommandDeps extends ApprovalDeps {
  /** Users who may decide in any group, as `<channel>:<user id>` (`CHATGATE_APPROVAL_ADMINS`). */
  admins: readonly string[];
}

/**
 * A command's answer, whether the question its buttons asked is settled (no longer pending), whether
 * it was so before (`repeat`), and the questions its turn still waits for (`open`, their text): a
 * turn that asked several resumes only once each is decided.
 */
export interface ApprovalAnswer {
  text: string;
  settled: boolean;
  repeat?: boolean;
  open?: string[];
}

const USAGE = {
  approve: 'Use /approve <id>, /approve <id> always (this tool runs without asking in this chat from now on) or /approve all.',
  deny: 'Use /deny <id> or /deny all.',
} as const;

/** Whether `command` is one of the approval commands this module answers. */
export function isApprovalCommand(command: ChatCommand): boolean {
  return command.name === 'approve' || command.name === 'deny' || command.name === 'revoke';
}

/** Answers `/approve`, `/deny` or `/revoke` from `message` for its session. */
export async function answerApprovalCommand(deps: ApprovalCommandDeps, sessionId: string, message: InboundMessage, command: ChatCommand): Promise<ApprovalAnswer> {
  if (command.name === 'revoke') return { text: await revoke(deps, sessionId, command.args), settled: false };
  const approve = command.name === 'approve';
  const target = parseDecisionTarget(command.args, approve);
  if (!target) return { text: USAGE[approve ? 'approve' : 'deny'], settled: false };
  const records = target.kind === 'all'
    ? (await deps.store.list(sessionId)).filter((record) => record.state === 'pending')
    : (await deps.store.read(sessionId, [target.id])).filter((record): record is ApprovalRecord => record !== null);
  if (records.length === 0) {
    return { text: target.kind === 'all' ? 'Nothing is waiting for your approval here.' : `There is no approval ${target.id} in this chat.`, settled: target.kind === 'one', ...(target.kind === 'one' ? { repeat: true } : {}) };
  }
  const lines: string[] = [];
  let settled = true;
  let applied = 0;
  for (const record of records) {
    if (!mayDecide(deps, message, record)) {
      lines.push(`Only ${record.askedBy.userName}, whose message started this, or an admin can decide ${record.id} (${record.tool}).`);
      settled = settled && record.state !== 'pending';
      continue;
    }
    const by = { userId: message.userId, userName: message.userName };
    const always = target.kind === 'one' && target.always;
    // The resumed turn's answer names this message: an API request waits for it by that id.
    const result = await decideAndWake(deps, sessionId, record.id, { decision: approve ? 'approved' : 'denied', via: 'user', by, always }, message.id);
    if (result.outcome === 'applied') applied++;
    if (result.outcome === 'unknown') lines.push(`There is no approval ${record.id} in this chat.`);
    else lines.push(result.outcome === 'applied' ? decisionLine(result.record) : `Already decided — ${decisionLine(result.record)}`);
  }
  const open = await openQuestions(deps.store, sessionId, records);
  return { text: lines.join('\n'), settled, ...(settled && applied === 0 ? { repeat: true } : {}), ...(open.length > 0 ? { open } : {}) };
}

/**
 * `/stop` (or `/reset`, `via`) with questions open: every pending approval of the session is denied
 * and the turn is woken, so it ends. @returns how many were denied.
 */
export async function denyPending(deps: ApprovalDeps, sessionId: string, via: 'stop' | 'reset' = 'stop'): Promise<number> {
  const pending = (await deps.store.list(sessionId)).filter((record) => record.state === 'pending');
  let denied = 0;
  for (const record of pending) {
    const result = await decideAndWake(deps, sessionId, record.id, { decision: 'denied', via });
    if (result.outcome === 'applied') denied++;
  }
  return denied;
}

/** The questions of the turns of `records` still undecided and not past their time (the turn waits for them: workers/turn-job.ts). */
async function openQuestions(store: ApprovalDeps['store'], sessionId: string, records: readonly ApprovalRecord[]): Promise<string[]> {
  const turns = new Set(records.map((record) => record.turnId));
  const now = Date.now();
  const open = (await store.list(sessionId)).filter((record) => awaitsDecision(record, now) && turns.has(record.turnId));
  return open.map(approvalPrompt);
}

async function revoke(deps: ApprovalDeps, sessionId: string, tool: string): Promise<string> {
  const grants = await deps.store.grants(sessionId);
  const names = grants.map((grant) => grant.tool).join(', ') || 'none';
  if (!tool) return `Use /revoke <tool>. Tools that run without asking in this chat: ${names}.`;
  return (await deps.store.revoke(sessionId, tool))
    ? `Revoked: ${tool} asks for approval again in this chat.`
    : `${tool} has no "always" approval in this chat. Tools that run without asking here: ${names}.`;
}

function mayDecide(deps: ApprovalCommandDeps, message: InboundMessage, record: ApprovalRecord): boolean {
  if (message.chatType !== 'group') return true;
  return message.userId === record.askedBy.userId || deps.admins.includes(`${message.channel}:${message.userId}`);
}
