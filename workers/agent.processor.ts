import { randomBytes } from 'node:crypto';
import { answeredIds, type OutboundMessage } from '../src/core/inbound.js';
import { hasToolCalls, toolCallIds, withOwnCallIds } from '../src/core/messages.js';
import type { SessionMeta } from '../src/redis/session-store.js';
import { BudgetError, StaleCommitError, type LlmError } from '../src/errors.js';
import type { CompletionResult } from '../src/llm/answer.js';
import { toLlmError } from '../src/llm/errors.js';
import { createStepLog } from '../src/redis/step-log.js';
import { TurnState } from '../src/session/turn-state.js';
import { deadLetterTurn } from './dead-letter.js';
import { liveReplyTargetOf, settleLiveReply, liveReplyHooks } from './live-reply-publisher.js';
import { modelFailureDetail, TURN_NOTICES } from './notices.js';
import { isTurnStopped } from './turn-stop.js';
import { finish } from './turn-commit.js';
import { compact, compactIfNeeded } from './turn-compaction.js';
import { appendInbound, freshItems, steerIn } from './turn-inbound.js';
import { buildRequest, channelOf, clearSteps, ensureLease, metricsOf, type AgentDeps, type AgentOptions, type Loop, type TurnInput } from './turn-loop.js';
import { applyResult } from './turn-round.js';

export type { AgentDeps, AgentOptions, LeaseGuard, TurnInput } from './turn-loop.js';
export { TURN_NOTICES };

/** What a turn committed: its replies, and its session as the last commit left it (what the idle compaction decides on, without reading it back). */
export interface AgentTurnResult {
  replies: OutboundMessage[];
  session: { meta: SessionMeta; messageCount: number };
}

/**
 * Runs one turn: puts the new inbound messages into the projection, then loops model call → tools
 * until the model answers, compacting before any call whose request reaches the trigger. Every
 * round is committed atomically; the final commit deletes the processing list and puts the replies
 * in the outbox. @returns the replies committed and the session's meta after the last commit. @throws StaleCommitError when the lease was lost
 * (checked before every model call and tool, so a turn that lost it stops at once, committing nothing more).
 */
export async function runAgentTurn(deps: AgentDeps, options: AgentOptions, input: TurnInput): Promise<AgentTurnResult> {
  const last = input.items[input.items.length - 1]!;
  // The turn's usage is for its last sender, in the rollups as in the budgets.
  const user = `${last.channel}:${last.userId}`;
  // Every model call of the turn (its summaries and transcriptions too) counts for its user and chat, and its spend for the per-turn caps.
  const notices: string[] = [];
  const budgetNotices: string[] = [];
  const spend = { usedMicro: 0, usedTokens: 0, onNotice: (text: string) => { notices.push(text); budgetNotices.push(text); } };
  const turn = new TurnState(deps.store, input.snapshot.sessionId, input.snapshot, input.fence, user, { user, chat: input.snapshot.sessionId, turn: spend });
  const turnId = input.items[0]!.id;
  const loop: Loop = {
    deps, options, turn, items: input.items, system: { role: 'system', content: options.systemPrompt },
    log: deps.logger, calls: 0, contextFailures: 0, manual: null, notices, budgetNotices, compactionsSinceCall: 0, lease: input.lease,
    images: new Map(), turnId, replyIds: input.items.map((item) => item.id), steps: createStepLog(deps.redis, { keys: deps.store.keys(turn.sessionId), turnId, fence: input.fence }), stepsKept: false, signal: input.signal,
  };
  const committed = (replies: OutboundMessage[]): AgentTurnResult => ({ replies, session: { meta: loop.turn.meta, messageCount: loop.turn.entries.length } });
  try {
    return committed(await runLoop(loop));
  } catch (err) {
    // A stopped turn commits what earlier rounds committed and answers its messages with "Stopped.".
    if (isTurnStopped(err, loop.signal)) {
      loop.log.info({ calls: loop.calls }, 'turn stopped (/stop): the round in progress is dropped');
      return committed(await finish(loop, null, TURN_NOTICES.stopped));
    }
    throw err;
  }
}

/** The tool loop: model call, then the round's tools (turn-round.ts), until an answer or a limit ends the turn. */
async function runLoop(loop: Loop): Promise<OutboundMessage[]> {
  const { deps, options } = loop;
  const resumed = await resumeRound(loop);
  if (resumed) return resumed;
  // Only decisions in the inbox and no turn waiting for them (a late second press): nothing to answer.
  if (loop.items.every((item) => item.event !== undefined)) return finish(loop, null, null);
  await appendInbound(loop);
  const stream = deps.liveReplies ? deps.liveReplies(liveReplyTargetOf(loop.turn.sessionId, loop.items), answeredIds(loop.items)) : null;
  for (;;) {
    if (loop.calls >= options.maxModelCalls) return finish(loop, null, TURN_NOTICES.maxCalls(loop.calls));
    const request = await buildRequest(loop);
    if (await compactIfNeeded(loop, request.overhead)) continue;
    await ensureLease(loop, 'model call');
    deps.onModelCall?.();
    loop.calls++;
    loop.compactionsSinceCall = 0;
    let result: CompletionResult;
    try {
      result = await deps.llm.complete({ messages: request.messages, tools: request.tools, promptTokens: loop.turn.requestTokens(request.overhead), scope: loop.turn.callScope, logger: loop.log, signal: loop.signal, ...outputLimit(loop), ...liveReplyHooks(stream) });
    } catch (err) {
      await stream?.drop();
      // A spend limit holds: the turn ends with the message that says which and until when.
      if (err instanceof BudgetError) return finish(loop, null, err.notice, '', 'over_budget');
      const error = toLlmError(err, 'chat completion');
      if (isTurnStopped(error, loop.signal)) throw error;
      metricsOf(loop).record({ type: 'model_call', channel: channelOf(loop), outcome: error.kind });
      const ended = await onModelError(loop, error, request.overhead);
      if (ended === null) continue;
      return ended;
    }
    result = withOwnIds(loop, result);
    await settleLiveReply(stream, result.message);
    // A round with tool calls is recorded before its tools run; a final answer is recorded by the
    // turn's last commit itself (a crash before that commit asks the model again, as one during the call does).
    if ((result.message.tool_calls ?? []).length > 0) {
      loop.stepsKept = true;
      await loop.steps.recordAnswer(result);
    }
    const done = await applyResult(loop, result, request.overhead, null);
    if (done) return done;
    // The round is committed: messages sent meanwhile in `steer` mode join before the next call (and its live text names them).
    if ((await steerIn(loop)) > 0) stream?.answering(answeredIds(loop.items));
  }
}

/**
 * The answer with an id of its own for each tool call, before anything is keyed by it (the step log,
 * approvals, idempotency keys): some endpoints send empty ids, or one id for several calls.
 */
function withOwnIds(loop: Loop, result: CompletionResult): CompletionResult {
  // A final answer (most model calls) has no ids to check: the history is not scanned for it.
  if (!hasToolCalls(result.message)) return result;
  const message = withOwnCallIds(result.message, toolCallIds(loop.turn.messages()), () => `call_${randomBytes(12).toString('hex')}`);
  if (message === result.message) return result;
  loop.log.warn({ ids: result.message.tool_calls?.map((call) => call.id) }, 'tool calls with empty or repeated ids got ids of their own');
  return { ...result, message };
}

/**
 * Resumes the round a crashed run of this turn left in its step log: the answer is not asked
 * for again, completed tool calls are not run again (see `runToolCall`). A recorded final
 * answer (a log written before final answers went straight to the commit) stands only if no
 * message joined the turn since. @returns the replies when that ended
 * the turn, else null (nothing to resume, or the round was committed: the loop goes on).
 */
async function resumeRound(loop: Loop): Promise<OutboundMessage[] | null> {
  // A round continues the projection it was asked on: gone after a /reset (the turn starts over).
  // A turn none of whose messages is in the projection yet recorded no round: nothing to read.
  if (!loop.turn.meta.turnInboundIds.includes(loop.turnId)) return null;
  const round = await loop.steps.read();
  if (round) loop.stepsKept = true;
  if (!round || round.committed) return null;
  const calls = round.answer.message.tool_calls ?? [];
  const ids = new Set(calls.map((call) => call.id));
  // Committed just before the crash, the marker not yet written: the projection holds the round.
  if (calls.length > 0 && loop.turn.messages().some((m) => m.role === 'assistant' && m.tool_calls?.some((call) => ids.has(call.id)))) return null;
  if (calls.length === 0 && freshItems(loop).length > 0) return null;
  loop.calls++;
  loop.log.info({ toolCalls: calls.length, recordedResults: round.results.size, started: round.started.size }, 'turn resumed from its step log');
  const { overhead } = await buildRequest(loop);
  return applyResult(loop, round.answer, overhead, round);
}

/**
 * @returns null to retry the call, or the replies that end the turn. A failure the client already
 * retried (or one retrying cannot fix) ends the turn: its messages go to the dead letters, where
 * `chatgate retry` replays them, and the user is told why.
 */
async function onModelError(loop: Loop, error: LlmError, overhead: number): Promise<OutboundMessage[] | null> {
  loop.log.warn({ err: error, kind: error.kind, status: error.status }, 'model call failed');
  if (error.kind === 'context_length') {
    loop.contextFailures++;
    if (loop.contextFailures > loop.options.maxContextRetries) return finish(loop, null, TURN_NOTICES.contextOverflow);
    await compact(loop, 'reactive', true, loop.turn.requestTokens(overhead));
    return null;
  }
  const notice = error.kind === 'transient' || error.kind === 'connection' ? TURN_NOTICES.unavailable(modelFailureDetail(error, loop.deps.llm.timeoutMs)) : TURN_NOTICES.refused(modelFailureDetail(error, loop.deps.llm.timeoutMs));
  const { deps, turn } = loop;
  const moved = await deadLetterTurn({ redis: deps.redis, logger: loop.log }, { sessionId: turn.sessionId, keys: deps.store.keys(turn.sessionId), fence: turn.fence, err: error, notice });
  if (moved === 0) throw new StaleCommitError(turn.sessionId, 'the session lease was lost before the failed turn was set aside');
  await clearSteps(loop);
  return [];
}

function outputLimit(loop: Loop): { maxTokens?: number } {
  const reserve = loop.options.reservedOutputTokens ?? 0;
  return reserve > 0 ? { maxTokens: reserve } : {};
}
