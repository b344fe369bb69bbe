import { isEffectiveCompaction, fillOf, type SessionLimits } from '../core/session-figures.js';
import { REPLY_PRIMING_TOKENS } from '../core/token-framing.js';
import { hasToolCalls, isToolImagesMessage, messageText } from '../core/messages.js';
import { TOOL_CALL_TEXT_MAX, type CompactionEvent, type FillPoint, type ResetEvent, type SessionToolCall } from '../core/session-view.js';
import { truncateText } from '../core/text.js';
import type { StoredTranscriptEntry, TranscriptCompaction } from './transcript.js';

/** A session's timeline replayed from its transcript. */
export interface Replay {
  /** One point per model call. */
  fillHistory: FillPoint[];
  compactions: CompactionEvent[];
  resets: ResetEvent[];
  /** Each tool call with the turn it belongs to and its result, when recorded. */
  toolCalls: SessionToolCall[];
}

interface Cursor {
  /** Estimated size of the next request, tokens. */
  tokens: number;
  calls: number;
  turn: number;
  previousRole: string;
  /** After a hygiene compaction: its size already holds the waiting messages the next turn appends. */
  absorbUsers: boolean;
}

/**
 * Replays the transcript into one point per model call: the prompt tokens the provider billed for
 * it (recorded on its answer), else an estimate (overhead plus the messages since the last
 * compaction or reset). Compactions sit between calls at the size of the request after them;
 * no-ops and aborts leave the size as it was.
 */
export function replayTranscript(entries: readonly StoredTranscriptEntry[], overheadTokens: number, limits: SessionLimits): Replay {
  const base = Math.max(overheadTokens, REPLY_PRIMING_TOKENS);
  const replay: Replay = { fillHistory: [], compactions: [], resets: [], toolCalls: [] };
  const pending = new Map<string, SessionToolCall>();
  const at: Cursor = { tokens: base, calls: 0, turn: 0, previousRole: '', absorbUsers: false };
  for (const entry of entries) {
    if (entry.type === 'approval') continue;
    if (entry.type === 'compaction') onCompaction(replay, at, entry, base);
    else if (entry.type === 'reset') {
      replay.resets.push({ call: at.calls, turn: Math.max(at.turn, 1), at: entry.atMs, removedMessages: entry.removedMessages });
      Object.assign(at, { tokens: base, absorbUsers: false });
    } else if (entry.message.role === 'assistant') {
      at.calls += 1;
      const tokens = entry.promptTokens ?? at.tokens;
      replay.fillHistory.push({ call: at.calls, turn: Math.max(at.turn, 1), at: entry.atMs, tokens, fill: fillOf(tokens, limits) });
      Object.assign(at, { tokens: tokens + entry.tokens, previousRole: 'assistant', absorbUsers: false });
      if (hasToolCalls(entry.message)) {
        for (const call of entry.message.tool_calls) {
          const row: SessionToolCall = { turn: Math.max(at.turn, 1), callId: call.id, tool: call.function.name, args: cut(call.function.arguments), result: null, atMs: entry.atMs };
          replay.toolCalls.push(row);
          pending.set(call.id, row);
        }
      }
    } else {
      if (entry.message.role === 'tool') {
        const row = pending.get(entry.message.tool_call_id);
        if (row) row.result = cut(messageText(entry.message));
        pending.delete(entry.message.tool_call_id);
      }
      // A round's images message belongs to the round: it starts no turn.
      if (entry.message.role === 'user' && at.previousRole !== 'user' && !isToolImagesMessage(entry.message, at.previousRole)) at.turn += 1;
      if (!(at.absorbUsers && entry.message.role === 'user')) at.tokens += entry.tokens;
      at.previousRole = entry.message.role;
    }
  }
  return replay;
}

function cut(text: string): string {
  const short = truncateText(text, TOOL_CALL_TEXT_MAX);
  return short === text ? text : `${short}…`;
}

function onCompaction(replay: Replay, at: Cursor, entry: TranscriptCompaction, base: number): void {
  const effective = isEffectiveCompaction(entry.outcome);
  // The request outside the compacted messages (tool schemas, notes) stays as it was.
  const overhead = entry.requestTokens === undefined ? base : Math.max(0, entry.requestTokens - entry.tokensBefore);
  const after = effective ? entry.tokensAfter + overhead : at.tokens;
  replay.compactions.push({
    call: at.calls, turn: Math.max(at.turn, 1), at: entry.atMs, layer: entry.layer, outcome: entry.outcome,
    tokensBefore: entry.tokensBefore, tokensAfter: entry.tokensAfter, requestTokensBefore: entry.tokensBefore + overhead, requestTokensAfter: after, durationMs: entry.durationMs,
    ...(entry.model ? { model: entry.model } : {}), ...(entry.reason ? { reason: entry.reason } : {}),
  });
  if (!effective) return;
  at.tokens = after;
  at.absorbUsers = entry.layer === 'hygiene';
}
