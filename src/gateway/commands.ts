import type { ChatCommand } from '../core/commands.js';
import { HELP_TEXT } from '../core/commands.js';
import { describeContext, formatShare, formatTokens } from '../core/session-figures.js';
import type { SessionOps } from '../session/session-ops.js';
import type { SessionDetail, SessionView } from '../session/view.js';

/** What the command handlers need. */
export interface CommandDeps {
  /** The session read model: `/usage`, `/status` and `/pins` show what every other surface shows. */
  view: SessionView;
  ops: SessionOps;
  /** Where the session's turn is, for `/status`: running, queued (with how many turns ahead) or none. */
  turnPosition: (sessionId: string) => Promise<TurnPosition>;
}

/** Where a session's next turn stands in the turn queue. */
export type TurnPosition = { state: 'none' } | { state: 'running' } | { state: 'queued'; ahead: number };

// Provider error text never reaches the chat: the outcome says what happened, the logs say why.
const OUTCOME_TEXT: Partial<Record<string, string>> = {
  compacted: 'The earlier conversation is now a summary; identifiers it lost are pinned',
  pruned: 'Old tool output was shortened; no summary was needed',
  fallback: 'The summariser was unavailable, so a simple summary was built from the turns',
  aborted: 'The summariser could not be reached, so nothing was changed; try again in a while',
};

const BUSY = 'I am writing a reply in this chat right now. Try again when it has arrived.';
const NOTHING_YET = 'Nothing has been said in this chat yet, so there is nothing to show.';

/** Answers one chat command for a session; returns the reply text (Markdown). */
export async function runCommand(deps: CommandDeps, sessionId: string, command: ChatCommand): Promise<string> {
  switch (command.name) {
    case 'help':
      return HELP_TEXT;
    case 'usage':
      return withDetail(deps, sessionId, usageText);
    case 'status':
      return statusText(deps, sessionId);
    case 'pins':
      return withDetail(deps, sessionId, pinsText);
    case 'compact': {
      const result = await deps.ops.compact(sessionId, command.args || undefined);
      if (result.busy) return BUSY;
      const r = result.value;
      const focus = command.args ? ` (focus: ${command.args})` : '';
      return `Compaction ${r.outcome}${focus}: ${fmt(r.tokensBefore)} → ${fmt(r.tokensAfter)} tokens. ${OUTCOME_TEXT[r.outcome] ?? r.reason}.`;
    }
    case 'reset': {
      const result = await deps.ops.reset(sessionId);
      if (result.busy) return BUSY;
      return `Started a fresh conversation (${result.value.removedMessages} messages left the context; the transcript keeps them).`;
    }
  }
}

async function withDetail(deps: CommandDeps, sessionId: string, render: (detail: SessionDetail) => string): Promise<string> {
  const detail = await deps.view.getSession(sessionId);
  return detail ? render(detail) : NOTHING_YET;
}

function usageText(d: SessionDetail): string {
  const l = d.ledger;
  const attempts = Object.entries(l.compactionsByLayer)
    .flatMap(([layer, outcomes]) => Object.entries(outcomes ?? {}).map(([outcome, n]) => `${layer} ${outcome} ${n}`)).join(', ');
  return [
    `**Usage of this chat** (${d.limits.model})`,
    `Tokens: ${fmt(l.promptTokens)} in (${fmt(l.cachedTokens)} cached, ${formatShare(l.cacheShare)}), ${fmt(l.completionTokens)} out, ${l.calls} model call${l.calls === 1 ? '' : 's'}`,
    `Estimated cost: $${l.costUsd.toFixed(4)}`,
    `Context: next request ≈ ${describeContext(d.context)}`,
    `Compactions: ${l.compactions}${attempts ? ` (attempts: ${attempts})` : ''}; ${fmt(l.tokensRemoved)} tokens removed${l.resets > 0 ? `; ${l.resets} reset${l.resets === 1 ? '' : 's'}` : ''}`,
    l.summaryCalls > 0 ? `Summaries: ${l.summaryCalls} call${l.summaryCalls === 1 ? '' : 's'}, ${fmt(l.summaryPromptTokens)} tokens in, ${fmt(l.summaryCompletionTokens)} out (included in the cost)` : '',
  ].filter(Boolean).join('\n');
}

async function statusText(deps: CommandDeps, sessionId: string): Promise<string> {
  const [d, position] = await Promise.all([deps.view.getSession(sessionId), deps.turnPosition(sessionId)]);
  if (!d) return NOTHING_YET;
  const a = d.activity;
  return [
    `**Status** — model ${d.limits.model}, window ${fmt(d.limits.contextWindow)} tokens`,
    `Session: ${sessionId}, ${duration(Date.now() - a.createdAt)} old, ${a.contextMessages} messages in context`,
    `State: ${a.busy ? 'busy (a reply is being written)' : 'idle'}; ${a.waiting} of your messages waiting; ${positionText(position)}`,
    d.session.paused ? 'Automatic compaction is paused here: use /compact <focus> or /reset.' : '',
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
    ...(noteLines.length > 0 ? noteLines : ['- none yet (ask me to remember something)']),
    '**Pinned facts** (identifiers kept verbatim from compacted turns)',
    ...(d.pinnedFacts.length > 0 ? d.pinnedFacts.map((f) => `- ${f}`) : ['- none']),
  ].join('\n');
}

const fmt = formatTokens;

function duration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'less than a minute';
  if (minutes < 120) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h`;
}
