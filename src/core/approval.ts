/**
 * Approvals of tool calls, the pure part: the policy of a tool (`auto`, `ask`, `deny`) and the
 * operator's rules that override it, the stored approval record (versioned), the readable summary
 * of a call the user is asked about, and the texts of the decision commands.
 */
import type { ChannelName } from './inbound.js';
import { truncateText } from './text.js';

/** What happens when the model calls a tool: run it (`auto`), ask the user first (`ask`), never offer it (`deny`). */
export type ToolApproval = 'auto' | 'ask' | 'deny';

/** The policies, in the order the docs list them. */
export const TOOL_APPROVALS: readonly ToolApproval[] = ['auto', 'ask', 'deny'];

/** One operator rule: tools whose name matches `pattern` (`*` any run of characters, `?` one) get `approval`. */
export interface ApprovalRule {
  pattern: string;
  approval: ToolApproval;
}

/** Format version of a stored {@link ApprovalRecord}; a record of another version is refused. */
export const APPROVAL_RECORD_VERSION = 1;

/** Where an approval stands. `pending` until someone (or the clock, or `/stop`) decides. */
export type ApprovalState = 'pending' | 'approved' | 'denied' | 'expired';

/** How a decision was made: `user` (a button or command), `timeout` (the expiry), `stop` (`/stop` denied it) or `reset` (`/reset` cancelled it). */
export type DecisionVia = 'user' | 'timeout' | 'stop' | 'reset';

/** Who decided: a user of the chat, the clock (`timeout`) or `/stop`. */
export interface ApprovalDecider {
  userId: string;
  userName: string;
}

/** One asked tool call as stored in the session's approvals hash (JSON, `v` {@link APPROVAL_RECORD_VERSION}). */
export interface ApprovalRecord {
  v: 1;
  /** Short id the user types (`/approve <id>`), unique in its session. */
  id: string;
  sessionId: string;
  /** The turn (the id of its first message) and the model's id of the call. */
  turnId: string;
  callId: string;
  tool: string;
  /** The call's arguments as the model sent them (JSON text, bounded). */
  args: string;
  /** The chat the question was asked in: where the decision's wake-up event goes. */
  route: { channel: ChannelName; chatId: string; threadId?: string };
  /** The user whose message started the turn: in groups only they (or an admin) may decide. */
  askedBy: ApprovalDecider;
  chatType: 'private' | 'group';
  askedAtMs: number;
  expiresAtMs: number;
  state: ApprovalState;
  /** Incremented by every change (the decision script's compare). */
  version: number;
  decidedBy?: ApprovalDecider;
  decidedVia?: DecisionVia;
  decidedAtMs?: number;
  /** Approved with "Always in this chat": the tool was granted for the session. */
  always?: boolean;
}

/** A grant: the tool runs without asking in this session until `/revoke` or `/new`. */
export interface ApprovalGrant {
  v: 1;
  tool: string;
  by: ApprovalDecider;
  atMs: number;
  /** The approval whose "Always in this chat" made it. */
  approvalId: string;
}

/** What `/approve` and `/deny` were given: one approval, or every pending one. */
export type DecisionTarget = { kind: 'all' } | { kind: 'one'; id: string; always: boolean };

/** Longest readable summary of a call's arguments, in code points. */
export const CALL_SUMMARY_MAX_CHARS = 600;
/** Longest shown value of one argument, in code points. */
const VALUE_MAX_CHARS = 160;
const ID_RE = /^[a-z0-9]{4,16}$/;

/**
 * Parses the operator's rules: `pattern=policy` items separated by commas (`CHATGATE_TOOL_APPROVAL`,
 * e.g. `mcp__filesystem__write_*=ask,danger=deny`). @throws Error naming every bad item.
 */
export function parseApprovalRules(text: string): ApprovalRule[] {
  const rules: ApprovalRule[] = [];
  const problems: string[] = [];
  for (const item of text.split(',').map((part) => part.trim()).filter(Boolean)) {
    const [pattern, policy, extra] = item.split('=').map((part) => part.trim());
    if (extra !== undefined || !pattern || !/^[\w*?-]{1,64}$/.test(pattern)) problems.push(`"${item}": the tool name must be letters, digits, _ - * ? (e.g. write_*=ask)`);
    else if (!(TOOL_APPROVALS as readonly string[]).includes(policy ?? '')) problems.push(`"${item}": the policy must be auto, ask or deny`);
    else rules.push({ pattern, approval: policy as ToolApproval });
  }
  if (problems.length > 0) throw new Error(problems.join('; '));
  return rules;
}

/**
 * The policy of tool `name`: the first operator rule whose pattern matches it, else the tool's own
 * (`defineTool`'s `approval`, an MCP server's setting), else `auto`.
 */
export function approvalFor(name: string, rules: readonly ApprovalRule[], declared?: ToolApproval): ToolApproval {
  const rule = rules.find((candidate) => globMatches(candidate.pattern, name));
  return rule?.approval ?? declared ?? 'auto';
}

/** Whether `name` matches `pattern` (`*` any run of characters, `?` one character, all else literal). */
export function globMatches(pattern: string, name: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${source}$`).test(name);
}

/**
 * The call's arguments in a short readable form: `key: value` per line for a JSON object (long
 * values cut), the raw text otherwise; at most {@link CALL_SUMMARY_MAX_CHARS} code points, cut
 * on a code-point boundary.
 */
export function describeCallArgs(argsJson: string, maxChars = CALL_SUMMARY_MAX_CHARS): string {
  let parsed: unknown;
  try {
    parsed = argsJson.trim() === '' ? {} : JSON.parse(argsJson);
  } catch {
    parsed = undefined;
  }
  const text = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
    ? Object.entries(parsed as Record<string, unknown>).map(([key, value]) => `${key}: ${shortValue(value)}`).join('\n') || '(no arguments)'
    : argsJson;
  return cut(text, maxChars);
}

/** The question shown in the chat (Markdown): the tool, its arguments, how to answer. */
export function approvalPrompt(record: Pick<ApprovalRecord, 'id' | 'tool' | 'args' | 'expiresAtMs' | 'askedAtMs'>): string {
  const minutes = Math.max(1, Math.round((record.expiresAtMs - record.askedAtMs) / 60_000));
  return [
    `**Approval needed** (${record.id}): the assistant wants to run \`${record.tool}\` with`,
    '```',
    describeCallArgs(record.args).replace(/```/g, "'''"),
    '```',
    `Approve: /approve ${record.id} · always in this chat: /approve ${record.id} always · deny: /deny ${record.id} (expires in ${minutes} min)`,
  ].join('\n');
}

/** Whether a turn still waits for `record` at `nowMs`: undecided and not past its time (past it, the next look expires it). */
export function awaitsDecision(record: Pick<ApprovalRecord, 'state' | 'expiresAtMs'>, nowMs: number): boolean {
  return record.state === 'pending' && nowMs < record.expiresAtMs;
}

/** The buttons of a question: each sends its command when pressed. */
export function approvalChoices(id: string): Array<{ label: string; command: string }> {
  return [
    { label: 'Approve', command: `/approve ${id}` },
    { label: 'Always in this chat', command: `/approve ${id} always` },
    { label: 'Deny', command: `/deny ${id}` },
  ];
}

/** Parses what follows `/approve` (`approve: true`) or `/deny`. @returns null when it is not `all` or an id (`always` only after `/approve <id>`). */
export function parseDecisionTarget(args: string, approve: boolean): DecisionTarget | null {
  const words = args.trim().toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 1 && words[0] === 'all') return { kind: 'all' };
  if (words.length < 1 || words.length > 2 || !ID_RE.test(words[0]!)) return null;
  if (words.length === 2 && (!approve || words[1] !== 'always')) return null;
  return { kind: 'one', id: words[0]!, always: words.length === 2 };
}

/** The tool result the model gets for a call that was not approved. */
export function notApprovedResult(record: Pick<ApprovalRecord, 'tool' | 'state' | 'decidedVia' | 'expiresAtMs' | 'askedAtMs'>): string {
  if (record.state === 'expired') {
    const minutes = Math.max(1, Math.round((record.expiresAtMs - record.askedAtMs) / 60_000));
    return `Error: this call of ${record.tool} was not run: the user did not approve it within ${minutes} min. Ask them before trying again.`;
  }
  if (record.decidedVia === 'stop') return `Error: this call of ${record.tool} was not run: the user stopped the turn (/stop), which denied it.`;
  if (record.decidedVia === 'reset') return `Error: this call of ${record.tool} was not run: the user started a fresh conversation (/reset), which cancelled it.`;
  return `Error: the user denied this call of ${record.tool}; it was not run. Do not call it again unless they ask for it.`;
}

/** One line saying how an approval was decided, for the chat (`Approved by Ann.`). */
export function decisionLine(record: Pick<ApprovalRecord, 'id' | 'tool' | 'state' | 'decidedBy' | 'decidedVia' | 'always'>): string {
  const who = record.decidedBy ? ` by ${record.decidedBy.userName}` : '';
  switch (record.state) {
    case 'approved': return `Approved${who}: ${record.tool} (${record.id})${record.always ? ', and always in this chat' : ''}.`;
    case 'denied': return record.decidedVia === 'reset' ? `Cancelled by /reset: ${record.tool} (${record.id}).` : `Denied${record.decidedVia === 'stop' ? ' by /stop' : who}: ${record.tool} (${record.id}).`;
    case 'expired': return `Expired: ${record.tool} (${record.id}) was not approved in time and did not run.`;
    case 'pending': return `Waiting for a decision: ${record.tool} (${record.id}).`;
  }
}

/**
 * Checks a stored record's shape and version. @throws Error naming the version when it is not
 * {@link APPROVAL_RECORD_VERSION} (written by another chatgate), or the field that is wrong.
 */
export function toApprovalRecord(json: string): ApprovalRecord {
  const value = JSON.parse(json) as Partial<ApprovalRecord> | null;
  if (value === null || typeof value !== 'object') throw new Error('approval record is not a JSON object');
  if (value.v !== APPROVAL_RECORD_VERSION) throw new Error(`approval record has format version ${String(value.v)}; this chatgate reads version ${APPROVAL_RECORD_VERSION}`);
  for (const field of ['id', 'sessionId', 'turnId', 'callId', 'tool', 'args', 'state'] as const) {
    if (typeof value[field] !== 'string') throw new Error(`approval record ${String(value.id)} has no string ${field}`);
  }
  return value as ApprovalRecord;
}

function shortValue(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value) ?? String(value);
  return cut(text.replace(/\s+/g, ' '), VALUE_MAX_CHARS);
}

/**
 * `text` cut to about `maxChars` code points, saying how many it hides: a user approving a call must
 * know that more runs than they read (a payload padded past the cut).
 */
function cut(text: string, maxChars: number): string {
  const length = [...text].length;
  if (length <= maxChars) return text;
  const mark = (hidden: number) => `… [${hidden.toLocaleString('en-US')} more characters not shown]`;
  const short = truncateText(text, Math.max(1, maxChars - [...mark(length)].length));
  return `${short}${mark(length - [...short].length)}`;
}
