import { isBusyMode, type BusyMode } from '../core/busy-mode.js';
import { describeBudgetsLeft, type BudgetBreach, type CounterState } from '../core/budget.js';
import type { ChatCommand } from '../core/commands.js';
import { HELP_TEXT, START_TEXT } from '../core/commands.js';
import { describeCompaction } from '../core/compaction/compaction-text.js';
import { countOf } from '../core/plural.js';
import { describeContext, formatShare, formatTokens } from '../core/session-figures.js';
import type { SessionOps } from '../session/session-ops.js';
import { formatMoney } from '../core/money.js';
import type { SessionDetail, SessionView } from '../core/session-view.js';

/** What the command handlers need. */
export interface CommandDeps {
  /** The session read model: `/usage`, `/status` and `/pins` show what every other surface shows. */
  view: SessionView;
  ops: SessionOps;
  /** The sender (`<channel>:<userId>`): whom the model calls of `/compact` and `/btw` count for beside the chat. */
  user?: string;
  /** Where the session's turn is, for `/status`: running, queued (with how many turns ahead) or none. */
  turnPosition: (sessionId: string) => Promise<TurnPosition>;
  /**
   * For `/status`: why no worker takes turns (`noWorkerReason`), or null when one is alive.
   * Absent: `/status` says nothing of the workers.
   */
  noWorker?: () => Promise<string | null>;
  /**
   * `/stop`: asks the worker running the session's turn to stop it. @returns the answer, or null
   * when the turn's own "Stopped." notice answers. Absent: `/stop` says it is not available.
   */
  stop?: (sessionId: string) => Promise<string | null>;
  /** `/retry`: takes the last exchange out and asks its user message again. @returns the answer. */
  retry?: (sessionId: string) => Promise<string>;
  /**
   * `/reset`: cancels the questions a turn waits for (that turn ends with the old conversation).
   * @returns how many it cancelled. Absent: approvals are not wired, nothing waits.
   */
  cancelQuestions?: (sessionId: string) => Promise<number>;
  /** `/mode`: the chat's busy mode, and changing it. Absent: `/mode` is not available. */
  busyMode?: BusyModePort;
  /**
   * `/btw <question>`: a side question answered from the session's context, outside its turn and
   * history. @returns the answer, or null when it comes later as a notice. Absent: not available.
   */
  btw?: (sessionId: string, question: string, user?: string) => Promise<string | null>;
  /**
   * `/usage`: the budget counters of the sender and this chat (and the deployment's), with the
   * limits in force, the limit that holds (an exhaustion marker, as the early answer reads it; null:
   * none) and the budgets' time zone. Absent: budgets are off, `/usage` says nothing of them.
   */
  budgets?: { state: (sessionId: string) => Promise<CounterState[]>; blocked?: (sessionId: string) => Promise<BudgetBreach | null>; timeZone: string; now?: () => number };
}

/** The chat's busy mode as `/mode` reads and sets it. */
export interface BusyModePort {
  /** The mode that holds, whether the chat chose it, and the channel's (what `/mode default` goes back to). */
  current(sessionId: string): Promise<{ mode: BusyMode; chosen: boolean; channelMode: BusyMode }>;
  /** Sets the chat's mode; null goes back to the channel's. */
  set(sessionId: string, mode: BusyMode | null): Promise<void>;
}

/** Where a session's next turn stands in the turn queue. */
export type TurnPosition = { state: 'none' } | { state: 'running' } | { state: 'queued'; ahead: number };

const BUSY = 'I am writing a reply in this chat right now. Try again when it has arrived, or send /stop first.';
const NOTHING_YET = 'Nothing has been said in this chat yet, so there is nothing to show.';

const UNAVAILABLE = 'This command is not available here.';

/** Answers one chat command for a session; returns the reply text (Markdown), or null when someone else answers. */
export async function runCommand(deps: CommandDeps, sessionId: string, command: ChatCommand): Promise<string | null> {
  switch (command.name) {
    case 'start':
      return START_TEXT;
    case 'help':
      return HELP_TEXT;
    case 'stop':
      return deps.stop ? deps.stop(sessionId) : UNAVAILABLE;
    case 'retry':
      return deps.retry ? deps.retry(sessionId) : UNAVAILABLE;
    case 'usage':
      return usageWithBudgets(deps, sessionId);
    case 'status':
      return statusText(deps, sessionId);
    case 'pins':
      return withDetail(deps, sessionId, pinsText);
    case 'approve':
    case 'deny':
    case 'revoke':
      return UNAVAILABLE; // answered by approval-commands.ts where approvals are wired
    case 'mode':
      return deps.busyMode ? modeCommand(deps.busyMode, sessionId, command.args) : UNAVAILABLE;
    case 'btw':
      if (!deps.btw) return UNAVAILABLE;
      return command.args ? deps.btw(sessionId, command.args, deps.user) : 'Ask your side question after the command: `/btw what was the ticket number again?` I answer it from this conversation, and neither it nor my answer enters the conversation.';
    case 'compact': {
      const result = await deps.ops.compact(sessionId, { focus: command.args || undefined, user: deps.user });
      if (result.busy) return BUSY;
      const r = result.value;
      return describeCompaction({ ...r, focus: command.args || undefined });
    }
    case 'reset': {
      const cancel = deps.cancelQuestions;
      const result = await deps.ops.reset(sessionId, cancel ? { cancelQuestions: () => cancel(sessionId) } : {});
      if (result.busy) return BUSY;
      const { removedMessages: removed, cancelledCalls: cancelled } = result.value;
      const fresh = removed === 0
        ? 'Started a fresh conversation (the context was already empty).'
        : `Started a fresh conversation (${countOf(removed, 'message')} left the context; the transcript keeps ${removed === 1 ? 'it' : 'them'}).`;
      if (cancelled === 0) return fresh;
      return `${fresh} ${cancelled === 1 ? 'The tool call waiting for approval was' : `The ${cancelled} tool calls waiting for approval were`} cancelled.`;
    }
  }
}

/** What each busy mode does, in the user's words. */
const MODE_TEXT: Readonly<Record<BusyMode, string>> = {
  steer: 'a message you send while I am answering joins the answer I am writing (I read it before my next step)',
  queue: 'a message you send while I am answering waits, and gets its own answer after the current one',
  interrupt: 'a message you send while I am answering stops that answer, and I answer the new message instead',
};

async function modeCommand(port: BusyModePort, sessionId: string, args: string): Promise<string> {
  const wanted = args.trim().toLowerCase();
  if (wanted === '') {
    const { mode, chosen, channelMode } = await port.current(sessionId);
    const origin = chosen ? `chosen in this chat; \`/mode default\` goes back to ${channelMode}` : 'the default here';
    return `Mode: **${mode}** (${origin}): ${MODE_TEXT[mode]}.\nChange it with /mode steer, /mode queue or /mode interrupt.`;
  }
  if (wanted === 'default') {
    await port.set(sessionId, null);
    const { mode } = await port.current(sessionId);
    return `Mode: back to the default, **${mode}**: ${MODE_TEXT[mode]}.`;
  }
  if (!isBusyMode(wanted)) return `\`${args.trim()}\` is not a mode. Use /mode steer, /mode queue, /mode interrupt or /mode default.`;
  await port.set(sessionId, wanted);
  return `Mode: **${wanted}**: from now on ${MODE_TEXT[wanted]}.`;
}

async function withDetail(deps: CommandDeps, sessionId: string, render: (detail: SessionDetail) => string): Promise<string> {
  const detail = await deps.view.getSession(sessionId);
  return detail ? render(detail) : NOTHING_YET;
}

async function usageWithBudgets(deps: CommandDeps, sessionId: string): Promise<string> {
  const [detail, left] = await Promise.all([deps.view.getSession(sessionId), budgetLines(deps, sessionId)]);
  const budgets = left.length > 0 ? ['', '**Budgets left**', ...left.map((line) => `- ${line}`)] : [];
  if (!detail) return budgets.length > 0 ? [NOTHING_YET, ...budgets].join('\n') : NOTHING_YET;
  return [usageText(detail), ...budgets].join('\n');
}

async function budgetLines(deps: CommandDeps, sessionId: string): Promise<string[]> {
  const budgets = deps.budgets;
  if (!budgets) return [];
  const [counters, blocked] = await Promise.all([budgets.state(sessionId), budgets.blocked?.(sessionId) ?? null]);
  return describeBudgetsLeft(counters, (budgets.now ?? Date.now)(), budgets.timeZone, blocked);
}

function usageText(d: SessionDetail): string {
  const l = d.ledger;
  const attempts = Object.entries(l.compactionsByLayer)
    .flatMap(([layer, outcomes]) => Object.entries(outcomes ?? {}).map(([outcome, n]) => `${layer} ${outcome} ${n}`)).join(', ');
  return [
    `**Usage of this chat** (${d.limits.model})`,
    `Tokens: ${fmt(l.promptTokens)} in (${fmt(l.cachedTokens)} cached, ${formatShare(l.cacheShare)}), ${fmt(l.completionTokens)} out, ${countOf(l.calls, 'model call')}`,
    `Estimated cost: ${formatMoney(l.costUsd, l.unpricedCalls)}`,
    `Context: next request ≈ ${describeContext(d.context)}`,
    `Compactions: ${l.compactions}${attempts ? ` (attempts: ${attempts})` : ''}; ${countOf(l.tokensRemoved, 'token')} removed${l.resets > 0 ? `; ${countOf(l.resets, 'reset')}` : ''}`,
    l.summaryCalls > 0 ? `Summaries: ${countOf(l.summaryCalls, 'call')}, ${countOf(l.summaryPromptTokens, 'token')} in, ${fmt(l.summaryCompletionTokens)} out (included in the cost)` : '',
  ].filter(Boolean).join('\n');
}

async function statusText(deps: CommandDeps, sessionId: string): Promise<string> {
  const [d, position, noWorker] = await Promise.all([deps.view.getSession(sessionId), deps.turnPosition(sessionId), deps.noWorker?.() ?? null]);
  // A turn queued while no worker runs: the message waits, it is not lost.
  const workers = position.state === 'queued' && noWorker ? `Your message is waiting for a worker: ${noWorker}. It is answered when one starts (\`npx chatgate worker\` or \`npm start\`).` : '';
  if (!d) {
    if (position.state === 'none') return NOTHING_YET;
    const waiting = position.state === 'queued' ? 'Your message is waiting for a worker to take it.' : '';
    return [`**Status** — ${positionText(position)}`, workers || waiting].filter(Boolean).join('\n');
  }
  const a = d.activity;
  return [
    `**Status** — model ${d.limits.model}, window ${countOf(d.limits.contextWindow, 'token')}`,
    `Session: ${sessionId}, ${duration(Date.now() - a.createdAt)} old, ${countOf(a.contextMessages, 'message')} in context`,
    `State: ${a.busy ? 'busy (a reply is being written)' : 'idle'}; ${fmt(a.waiting)} of your messages waiting; ${positionText(position)}`,
    workers,
    d.session.paused ? 'Automatic compaction is paused here: use /compact <focus> or /new.' : '',
  ].filter(Boolean).join('\n');
}

function positionText(position: TurnPosition): string {
  if (position.state === 'running') return 'your turn is running';
  if (position.state === 'queued') return position.ahead === 0 ? 'your turn is next in the queue' : `your turn is queued behind ${position.ahead} other${position.ahead === 1 ? '' : 's'}`;
  return 'no turn queued';
}

function pinsText(d: SessionDetail): string {
  const noteLines = d.notes.map((note) => `- ${note.key}: ${note.text}`);
  return [
    '**Notes** (kept for you, survive every compaction)',
    '',
    ...(noteLines.length > 0 ? noteLines : ['- none yet (ask me to remember something)']),
    // A blank line ends the list: without it Markdown takes the heading into the last bullet.
    '',
    '**Pinned facts** (identifiers kept verbatim from compacted turns)',
    '',
    ...(d.pinnedFacts.length > 0 ? d.pinnedFacts.map((f) => `- ${f}`) : ['- none']),
    '**Always approved in this chat** (/revoke <tool> to be asked again)',
    ...((d.grants ?? []).length > 0 ? d.grants!.map((g) => `- ${g.tool} (by ${g.by.userName}, ${new Date(g.atMs).toISOString().slice(0, 16).replace('T', ' ')} UTC)`) : ['- none']),
  ].join('\n');
}

const fmt = formatTokens;

function duration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'less than a minute';
  if (minutes < 120) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h`;
}
