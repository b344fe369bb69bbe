import type { ChatCommand } from '../core/commands.js';
import { HELP_TEXT } from '../core/commands.js';
import { messageText } from '../core/messages.js';
import { pinnedFactsOf } from '../core/summary-block.js';
import type { RedisClient } from '../redis/client.js';
import { createSessionNotes } from '../redis/notes.js';
import { requestTokens, type SessionStore } from '../redis/session-store.js';
import { readUsage } from '../redis/usage.js';
import type { SessionOps } from '../session/session-ops.js';

/** What the command handlers need. */
export interface CommandDeps {
  redis: RedisClient;
  store: SessionStore;
  ops: SessionOps;
  /** Where the session's turn is, for `/status`: running, queued (with how many turns ahead) or none. */
  turnPosition: (sessionId: string) => Promise<TurnPosition>;
}

/** Where a session's next turn stands in the turn queue. */
export type TurnPosition = { state: 'none' } | { state: 'running' } | { state: 'queued'; ahead: number };

/** Facts about the deployment that `/status` and `/usage` show. */
export interface CommandOptions {
  model: string;
  contextWindow: number;
  reservedOutputTokens: number;
  threshold: number;
  hygieneThreshold: number;
}

// Provider error text never reaches the chat: the outcome says what happened, the logs say why.
const OUTCOME_TEXT: Partial<Record<string, string>> = {
  compacted: 'The earlier conversation is now a summary; identifiers it lost are pinned',
  pruned: 'Old tool output was shortened; no summary was needed',
  fallback: 'The summariser was unavailable, so a simple summary was built from the turns',
  aborted: 'The summariser could not be reached, so nothing was changed; try again in a while',
};

const BUSY = 'I am writing a reply in this chat right now. Try again when it has arrived.';

/** Answers one chat command for a session; returns the reply text (Markdown). */
export async function runCommand(deps: CommandDeps, options: CommandOptions, sessionId: string, command: ChatCommand): Promise<string> {
  switch (command.name) {
    case 'help':
      return HELP_TEXT;
    case 'usage':
      return usageText(deps, options, sessionId);
    case 'status':
      return statusText(deps, options, sessionId);
    case 'pins':
      return pinsText(deps, sessionId);
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

async function usageText(deps: CommandDeps, options: CommandOptions, sessionId: string): Promise<string> {
  const keys = deps.store.keys(sessionId);
  const [usage, snapshot] = await Promise.all([readUsage(deps.redis, keys), deps.store.load(sessionId)]);
  const limit = options.contextWindow - options.reservedOutputTokens;
  const next = snapshot.entries.length === 0 ? 0 : requestTokens(snapshot);
  const compactions = Object.entries(usage.compactions).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  return [
    `**Usage of this chat** (${options.model})`,
    `Tokens: ${fmt(usage.promptTokens)} in (${fmt(usage.cachedTokens)} cached), ${fmt(usage.completionTokens)} out, ${usage.calls} model call${usage.calls === 1 ? '' : 's'}`,
    `Estimated cost: $${(usage.costMicroUsd / 1_000_000).toFixed(4)}`,
    `Context: next request ≈ ${fmt(next)} of ${fmt(limit)} tokens (${pct(next / limit)}); compaction at ${pct(options.threshold)} (${fmt(Math.floor(limit * options.threshold))}), hygiene at ${pct(options.hygieneThreshold)} (${fmt(Math.floor(limit * options.hygieneThreshold))})`,
    `Compactions: ${compactions}; ${fmt(usage.tokensRemovedByCompaction)} tokens removed`,
    usage.summaryCalls > 0 ? `Summaries: ${usage.summaryCalls} call${usage.summaryCalls === 1 ? '' : 's'}, ${fmt(usage.summaryPromptTokens)} tokens in, ${fmt(usage.summaryCompletionTokens)} out (included in the cost)` : '',
  ].filter(Boolean).join('\n');
}

async function statusText(deps: CommandDeps, options: CommandOptions, sessionId: string): Promise<string> {
  const keys = deps.store.keys(sessionId);
  const [snapshot, leased, inbox, position] = await Promise.all([
    deps.store.load(sessionId), deps.redis.exists(keys.lease), deps.redis.llen(keys.inbox), deps.turnPosition(sessionId),
  ]);
  const createdMs = (await deps.redis.hget(keys.meta, 'createdAtMs').then(Number)) || Date.now();
  return [
    `**Status** — model ${options.model}, window ${fmt(options.contextWindow)} tokens`,
    `Session: ${sessionId}, ${duration(Date.now() - createdMs)} old, ${snapshot.entries.length} messages in context`,
    `State: ${leased ? 'busy (a reply is being written)' : 'idle'}; ${inbox} of your messages waiting; ${positionText(position)}`,
    snapshot.meta.compaction?.paused ? 'Automatic compaction is paused here: use /compact <focus> or /reset.' : '',
  ].filter(Boolean).join('\n');
}

function positionText(position: TurnPosition): string {
  if (position.state === 'running') return 'your turn is running';
  if (position.state === 'queued') return position.ahead === 0 ? 'your turn is next in the queue' : `your turn is queued behind ${position.ahead} other${position.ahead === 1 ? '' : 's'}`;
  return 'no turn queued';
}

async function pinsText(deps: CommandDeps, sessionId: string): Promise<string> {
  const keys = deps.store.keys(sessionId);
  const [notes, snapshot] = await Promise.all([createSessionNotes(deps.redis, keys).list(), deps.store.load(sessionId)]);
  const pinned = snapshot.entries.flatMap((entry) => pinnedFactsOf(messageText(entry.message)));
  const noteLines = Object.entries(notes).map(([k, v]) => `- ${k}: ${v}`);
  return [
    '**Notes** (kept for you, survive every compaction)',
    ...(noteLines.length > 0 ? noteLines : ['- none yet (ask me to remember something)']),
    '**Pinned facts** (identifiers kept verbatim from compacted turns)',
    ...(pinned.length > 0 ? pinned.map((f) => `- ${f}`) : ['- none']),
  ].join('\n');
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function pct(share: number): string {
  return `${Math.round(share * 100)}%`;
}

function duration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'less than a minute';
  if (minutes < 120) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h`;
}
