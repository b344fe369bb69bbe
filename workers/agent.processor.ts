import type { ContextCompressor } from '../src/core/compaction/compressor.js';
import type { InboundMessage, OutboundMessage } from '../src/core/inbound.js';
import type { ChatMessage, ToolCall } from '../src/core/messages.js';
import { BudgetError, StaleCommitError, type LlmError } from '../src/errors.js';
import { runWithBudget } from '../src/budget/guard.js';
import type { Logger } from '../src/log.js';
import type { LlmClient } from '../src/llm/client.js';
import { toLlmError } from '../src/llm/errors.js';
import { replyJobId } from '../src/queue/names.js';
import type { RedisClient } from '../src/redis/client.js';
import { createSessionNotes } from '../src/redis/notes.js';
import { toEntry, type SessionSnapshot, type SessionStore, type StoredEntry } from '../src/redis/session-store.js';
import { searchTranscript, type TranscriptEntry } from '../src/redis/transcript.js';
import { callUsageDelta, unreportedCallDelta, type PriceTable, type UsageDelta } from '../src/redis/usage.js';
import { NOOP_METRICS, type Metrics } from '../src/metrics.js';
import type { CompactionLayer, SessionLimits } from '../src/core/session-figures.js';
import { runCompactionStep } from '../src/session/compaction-step.js';
import { notesMessage, overheadTokens, toolResultCap, toUserMessage, unansweredReplay } from './request.js';
import { createStepLog, type RecordedRound, type StepLog } from '../src/redis/step-log.js';
import { runToolCall, type ToolRound } from './tool-round.js';
import type { ToolRegistry } from './tools/registry.js';
import type { ToolContext } from './tools/types.js';
import { modelFailureDetail, TURN_NOTICES } from './notices.js';
import { deadLetterTurn } from './dead-letter.js';
import { TurnState } from '../src/session/turn-state.js';
import { bringsImage, NO_VISION_NOTICE, transcriptFiles, type AttachmentReader } from './attachments.js';
import { isTurnStopped } from './turn-stop.js';
import { automaticCompactionNotice } from '../src/core/compaction/compaction-text.js';
import { liveReplyTargetOf, settleLiveReply, liveReplyHooks, type TurnLiveReplies } from './live-reply-publisher.js';
import { approvalChoices, approvalPrompt, type ApprovalRecord } from '../src/core/approval.js';
import { DEFAULT_APPROVAL_TIMEOUT_MS, type ApprovalStore } from '../src/approvals/store.js';
import { gateRound, type Gate } from './approval-gate.js';
import type { CompletionResult } from '../src/llm/answer.js';

/** What the tool loop needs. */
export interface AgentDeps {
  redis: RedisClient;
  store: SessionStore;
  llm: LlmClient;
  compressor: ContextCompressor;
  tools: ToolRegistry;
  logger: Logger;
  /** Called before every model call (the gateway shows "typing"). */
  onModelCall?: () => void;
  /** Where model calls (answered and failed) and compactions are counted. Default {@link NOOP_METRICS}. */
  metrics?: Metrics;
  /** Reads attachments into the user message and inlines stored images (workers/attachments.ts). Default: files listed by name. */
  attachments?: AttachmentReader;
  /** Live replies while the model writes; default none. */
  liveReplies?: TurnLiveReplies;
  /** Where calls of `ask` tools are asked about and decided (src/approvals). Absent: such calls are refused. */
  approvals?: ApprovalStore;
}

/** Options of the tool loop. */
export interface AgentOptions {
  systemPrompt: string;
  contextWindow: number;
  /** Model calls allowed in one turn. */
  maxModelCalls: number;
  /** Forced compactions after "context length exceeded" per turn, before giving up. */
  maxContextRetries: number;
  /** Model that writes summaries (for the transcript); default the main model. */
  summaryModel?: string;
  prices?: PriceTable;
  /** Tokens kept free for the answer, sent as the call's output limit (`max_tokens`) when > 0. Default 0. */
  reservedOutputTokens?: number;
  /** Tell the user in one line when the in-loop compressor (or a reactive compaction) compacted. Default true. */
  compactionNotice?: boolean;
  /** How long an asked tool call waits for the user's decision, ms. Default {@link DEFAULT_APPROVAL_TIMEOUT_MS} (10 min). */
  approvalTimeoutMs?: number;
}

/** The session lease as the loop sees it: `confirm()` renews it and says whether it is still held. */
export interface LeaseGuard {
  confirm(): Promise<boolean>;
}

/** One turn's input: the session as loaded, the lease's fence and the messages taken from the inbox. */
export interface TurnInput {
  snapshot: SessionSnapshot;
  fence: number;
  items: InboundMessage[];
  /** Asked before every model call (summaries too) and every tool; a lost lease aborts the turn. */
  lease?: LeaseGuard;
  /** Aborted by `/stop`: the model call and tools end, the round in progress is dropped, the turn answers "Stopped.". */
  signal?: AbortSignal;
}

export { TURN_NOTICES };

interface Loop {
  deps: AgentDeps;
  options: AgentOptions;
  turn: TurnState;
  items: InboundMessage[];
  system: ChatMessage;
  log: Logger;
  calls: number;
  contextFailures: number;
  manual: { focus?: string } | null;
  notices: string[];
  /** Compactions since the last model call; bounds compaction to one in-loop run per call. */
  compactionsSinceCall: number;
  lease?: LeaseGuard;
  /** The turn's identity across retries: the id of its first message. */
  turnId: string;
  steps: StepLog;
  /** This run wrote or found a round of the turn in its step log: it is cleared when the turn ends. */
  stepsKept: boolean;
  /** Data URLs of the images this turn's requests inline (read from Redis once per turn). */
  images: Map<string, string | null>;
  signal?: AbortSignal;
}

/**
 * Runs one turn: puts the new inbound messages into the projection, then loops model call → tools
 * until the model answers, compacting before any call whose request reaches the trigger. Every
 * round is committed atomically; the final commit deletes the processing list and puts the replies
 * in the outbox. @returns the replies committed. @throws StaleCommitError when the lease was lost
 * (checked before every model call and tool, so a turn that lost it stops at once, committing nothing more).
 */
export async function runAgentTurn(deps: AgentDeps, options: AgentOptions, input: TurnInput): Promise<OutboundMessage[]> {
  const last = input.items[input.items.length - 1]!;
  // The turn's usage is for its last sender, in the rollups as in the budgets.
  const user = `${last.channel}:${last.userId}`;
  const turn = new TurnState(deps.store, input.snapshot.sessionId, input.snapshot, input.fence, user);
  const loop: Loop = {
    deps, options, turn, items: input.items, system: { role: 'system', content: options.systemPrompt },
    log: deps.logger, calls: 0, contextFailures: 0, manual: null, notices: [], compactionsSinceCall: 0, lease: input.lease,
    images: new Map(), turnId: input.items[0]!.id, steps: createStepLog(deps.redis, { keys: deps.store.keys(turn.sessionId), turnId: input.items[0]!.id, fence: input.fence }), stepsKept: false, signal: input.signal,
  };
  const scope = { user, chat: turn.sessionId };
  try {
    return await runWithBudget(scope, (text) => loop.notices.push(text), () => runLoop(loop));
  } catch (err) {
    // A stopped turn commits what earlier rounds committed and answers its messages with "Stopped.".
    if (isTurnStopped(err, loop.signal)) {
      loop.log.info({ calls: loop.calls }, 'turn stopped (/stop): the round in progress is dropped');
      return finish(loop, null, TURN_NOTICES.stopped);
    }
    throw err;
  }
}

async function runLoop(loop: Loop): Promise<OutboundMessage[]> {
  const { deps, options } = loop;
  const resumed = await resumeRound(loop);
  if (resumed) return resumed;
  // Only decisions in the inbox and no turn waiting for them (a late second press): nothing to answer.
  if (loop.items.every((item) => item.event !== undefined)) return finish(loop, null, null);
  await appendInbound(loop);
  const stream = deps.liveReplies ? deps.liveReplies(liveReplyTargetOf(loop.turn.sessionId, loop.items)) : null;
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
      result = await deps.llm.complete({ messages: request.messages, tools: request.tools, logger: loop.log, signal: loop.signal, ...outputLimit(options), ...liveReplyHooks(stream) });
    } catch (err) {
      await stream?.drop();
      // A spend limit holds: the turn ends with the message that says which and until when.
      if (err instanceof BudgetError) return finish(loop, null, err.notice);
      const error = toLlmError(err, 'chat completion');
      if (isTurnStopped(error, loop.signal)) throw error;
      metricsOf(loop).record({ type: 'model_call', channel: channelOf(loop), outcome: error.kind });
      const ended = await onModelError(loop, error, request.overhead);
      if (ended === null) continue;
      return ended;
    }
    await settleLiveReply(stream, result.message);
    // A round with tool calls is recorded before its tools run; a final answer is recorded by the
    // turn's last commit itself (a crash before that commit asks the model again, as one during the call does).
    if ((result.message.tool_calls ?? []).length > 0) {
      loop.stepsKept = true;
      await loop.steps.recordAnswer(result);
    }
    const done = await applyResult(loop, result, request.overhead, null);
    if (done) return done;
  }
}

/**
 * Resumes the round a crashed run of this turn left in its step log: the answer is not asked
 * for again, completed tool calls are not run again (see {@link runToolCall}). A recorded final
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

/** The turn's messages not yet in the projection (events, which the model never sees, left out). */
function freshItems(loop: Loop): InboundMessage[] {
  const applied = new Set(loop.turn.meta.turnInboundIds);
  return loop.items.filter((item) => !applied.has(item.id) && item.event === undefined);
}

async function appendInbound(loop: Loop): Promise<void> {
  const fresh = freshItems(loop);
  const last = loop.items[loop.items.length - 1]!;
  const route = { channel: last.channel, chatId: last.chatId, ...(last.threadId ? { threadId: last.threadId } : {}) };
  const users = await userMessagesOf(loop, fresh);
  const replayed = unansweredReplay(loop.turn.messages(), users);
  const entries = users.slice(replayed).map((user) => toEntry(user, loop.deps.compressor.tokenCounter, loop.deps.llm.model));
  if (entries.length === 0 && replayed === 0) return;
  const transcript = entries.map((entry, k) => ({ ...messageEvent(entry, fresh[replayed + k]!.id), ...transcriptFiles(fresh[replayed + k]!) }));
  // With no provider report yet, the next request is counted from its parts: record the system prompt and tools too (every surface reads it).
  const overhead = loop.turn.meta.lastPromptTokens === 0 ? { overheadTokens: (await buildRequest(loop)).overhead } : {};
  await loop.turn.append(entries, { transcript, meta: { turnInboundIds: loop.items.map((item) => item.id), route, limits: limitsOf(loop), ...overhead } });
}

async function buildRequest(loop: Loop): Promise<{ messages: ChatMessage[]; tools: ReturnType<ToolRegistry['schemas']>; overhead: number }> {
  const notes = notesMessage(await shownNotes(loop));
  const prefix = notes ? [loop.system, notes] : [loop.system];
  const tools = loop.deps.tools.schemas();
  const overhead = overheadTokens(prefix, tools, loop.deps.compressor.tokenCounter, loop.deps.llm.model);
  const history = loop.deps.attachments ? await loop.deps.attachments.inline(loop.turn.sessionId, loop.turn.messages(), loop.images) : loop.turn.messages();
  return { messages: [...prefix, ...history], tools, overhead };
}

/** The user messages of fresh inbound messages, their files read; what could not be read is told in the turn's notices. */
async function userMessagesOf(loop: Loop, fresh: InboundMessage[]): Promise<ChatMessage[]> {
  const reader = loop.deps.attachments;
  if (!reader) return fresh.map((item) => toUserMessage(item));
  const users: ChatMessage[] = [];
  for (const item of fresh) {
    const files = await reader.read(loop.turn.sessionId, item);
    loop.notices.push(...files.notices);
    users.push(toUserMessage(item, files));
  }
  if (!reader.vision && fresh.some(bringsImage) && (await reader.firstVisionNotice(loop.turn.sessionId))) loop.notices.push(NO_VISION_NOTICE);
  return users;
}

/** Compacts when the model asked for it or the request reached the trigger. @returns true when it ran. */
async function compactIfNeeded(loop: Loop, overhead: number): Promise<boolean> {
  const requestTokens = loop.turn.requestTokens(overhead);
  if (loop.manual) {
    const focus = loop.manual.focus;
    loop.manual = null;
    await compact(loop, 'manual', true, requestTokens, focus);
    return true;
  }
  if (loop.compactionsSinceCall > 0) return false;
  if (!loop.deps.compressor.shouldCompress(requestTokens, loop.turn.compaction)) return false;
  const before = loop.turn.meta.version;
  await compact(loop, 'in-loop', false, requestTokens);
  // A noop leaves the projection as it was: go on with the call instead of compacting again.
  return loop.turn.meta.version !== before && loop.turn.compaction.lastOutcome !== 'noop' && loop.turn.compaction.lastOutcome !== 'aborted';
}

async function compact(loop: Loop, layer: CompactionLayer, force: boolean, requestTokens: number, focus?: string): Promise<void> {
  await ensureLease(loop, 'compaction');
  const result = await runCompactionStep({
    compressor: loop.deps.compressor, turn: loop.turn, system: loop.system, requestTokens, layer, force, focus,
    summaryModel: loop.options.summaryModel ?? loop.deps.llm.model, model: loop.deps.llm.model, logger: loop.log, prices: loop.options.prices, metrics: loop.deps.metrics,
    notes: () => notesOf(loop).list(),
  });
  loop.compactionsSinceCall++;
  const notice = layer === 'manual' || loop.options.compactionNotice === false ? null : automaticCompactionNotice(result);
  if (notice) loop.notices.push(notice);
  if (result.pausedNow) loop.notices.push(TURN_NOTICES.paused);
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

/** Commits one answered call; @returns the replies when the turn is over, else null. */
async function applyResult(loop: Loop, result: CompletionResult, overhead: number, recorded: RecordedRound | null): Promise<OutboundMessage[] | null> {
  const { deps, options, turn } = loop;
  const usage: UsageDelta = result.usage
    ? callUsageDelta(result.model, result.usage, options.contextWindow, options.prices)
    : unreportedCallDelta(result.model, options.prices);
  // A resumed round's call was counted by the run that made it.
  if (!recorded) {
    metricsOf(loop).record({
      type: 'model_call', channel: channelOf(loop), outcome: 'ok', promptTokens: result.usage?.promptTokens, completionTokens: result.usage?.completionTokens,
      cachedTokens: result.usage?.cachedTokens, costUsd: (usage.incr.costMicroUsd ?? 0) / 1e6,
    });
  }
  const meta = { lastPromptTokens: result.usage?.promptTokens ?? 0, appendedTokensSince: 0, overheadTokens: overhead };
  const assistant = toEntry(result.message, deps.compressor.tokenCounter, deps.llm.model);
  const calls = result.message.tool_calls ?? [];
  if (calls.length === 0) {
    const text = (result.message.content ?? '').trim();
    return finish(loop, { entry: assistant, usage, meta, promptTokens: result.usage?.promptTokens }, text === '' ? TURN_NOTICES.empty : null, text);
  }
  const gate = await gateOf(loop, calls, recorded);
  if (gate.waiting.length > 0) return park(loop, gate.waiting);
  const round: ToolRound = {
    tools: deps.tools, steps: loop.steps, log: loop.log, recorded, model: deps.llm.model, gate, tokenCounter: deps.compressor.tokenCounter,
    maxTokens: toolResultCap(options.contextWindow, calls.length),
    context: (callId) => toolContext(loop, callId), beforeRun: (call) => ensureLease(loop, `tool ${call.function.name}`), signal: loop.signal,
  };
  const results: StoredEntry[] = [];
  for (const call of calls) {
    results.push(toEntry({ role: 'tool', tool_call_id: call.id, content: await runToolCall(round, call) }, deps.compressor.tokenCounter, deps.llm.model));
  }
  const entries = [assistant, ...results];
  const promptTokens = result.usage?.promptTokens;
  await turn.append(entries, { transcript: entries.map((entry, k) => messageEvent(entry, undefined, k === 0 ? promptTokens : undefined)), usage, meta });
  await loop.steps.recordCommitted();
  return null;
}

/** The round's calls at the approval gate (src/approvals); without an approval store every `ask` call is refused. */
async function gateOf(loop: Loop, calls: readonly ToolCall[], recorded: RecordedRound | null): Promise<Gate> {
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
async function park(loop: Loop, waiting: readonly ApprovalRecord[]): Promise<OutboundMessage[]> {
  const outbox = waiting.map((record) => ({ ...outbound(loop, replyJobId([loop.turnId, `approval-${record.id}`], 'notice'), approvalPrompt(record), 'notice', true), choices: approvalChoices(record.id) }));
  await loop.turn.commitOnly({ outbox });
  loop.log.info({ approvals: waiting.map((record) => record.id) }, 'turn waits for approval');
  return outbox;
}

interface FinalCall {
  entry: StoredEntry;
  usage: UsageDelta;
  meta: { lastPromptTokens: number; appendedTokensSince: number; overheadTokens: number };
  /** Prompt tokens the provider billed for the call (recorded on the answer's transcript entry). */
  promptTokens?: number;
}

/** The last commit of a turn: the answer (if any), replies into the outbox, processing deleted. */
async function finish(loop: Loop, final: FinalCall | null, notice: string | null, replyText = ''): Promise<OutboundMessage[]> {
  const ids = loop.items.map((item) => item.id);
  const replyId = replyJobId(ids, 'reply');
  const outbox: OutboundMessage[] = [];
  if (replyText) outbox.push(outbound(loop, replyId, replyText, 'reply', true));
  // Without an answer, the first notice stands in for it and is the one threaded to the asker.
  [...loop.notices, ...(notice ? [notice] : [])].forEach((text, k) => outbox.push(outbound(loop, replyJobId(ids, 'notice', k), text, 'notice', !replyText && k === 0)));
  // The notice answering in place of the reply ends the turn's stream (the web chat's live bubble).
  if (!replyText && outbox[0]) outbox[0].streamId = replyId;
  const change = { outbox, finishTurn: true };
  // The answer's entry names its reply, so a history view can tell it from the same reply seen live.
  const answered = replyText ? { replyId } : {};
  if (final) await loop.turn.append([final.entry], { ...change, transcript: [{ ...messageEvent(final.entry, undefined, final.promptTokens), ...answered }], usage: final.usage, meta: final.meta });
  else await loop.turn.commitOnly(change);
  await clearSteps(loop);
  loop.log.debug({ calls: loop.calls, messages: ids.length, replies: outbox.length }, 'turn committed');
  return outbox;
}

/**
 * One outbound message of the turn, to the chat of its last inbound message. With `threaded`, in
 * a group chat it replies to that message (so the asker sees the answer is theirs); in private
 * chats a reply quote is noise, so never there.
 */
function outbound(loop: Loop, id: string, text: string, kind: OutboundMessage['kind'], threaded = false): OutboundMessage {
  const last = loop.items[loop.items.length - 1]!;
  const message: OutboundMessage = { id, sessionId: loop.turn.sessionId, channel: last.channel, chatId: last.chatId, text, kind };
  if (last.threadId) message.threadId = last.threadId;
  if (threaded && last.chatType === 'group' && last.platformMessageId) message.replyTo = last.platformMessageId;
  return message;
}

/** @throws StaleCommitError when the session's lease is no longer ours: nothing more may be done for it. */
async function ensureLease(loop: Loop, before: string): Promise<void> {
  loop.signal?.throwIfAborted();
  if (!loop.lease || (await loop.lease.confirm())) return;
  throw new StaleCommitError(loop.turn.sessionId, `the session lease was lost before the ${before}`);
}

function outputLimit(options: AgentOptions): { maxTokens?: number } {
  const reserve = options.reservedOutputTokens ?? 0;
  return reserve > 0 ? { maxTokens: reserve } : {};
}

/** The step log is only read by a retry of this turn, which no longer comes: dropping it is tidiness. */
async function clearSteps(loop: Loop): Promise<void> {
  if (!loop.stepsKept) return;
  await loop.steps.clear().catch((err: unknown) => loop.log.warn({ err }, 'step log not cleared'));
}

function toolContext(loop: Loop, callId: string): Omit<ToolContext, 'signal'> {
  const keys = loop.deps.store.keys(loop.turn.sessionId);
  return {
    sessionId: loop.turn.sessionId,
    callId,
    idempotencyKey: `${loop.turn.sessionId}:${loop.turnId}:${callId}`,
    notes: notesOf(loop),
    searchTranscript: (query, limit) => searchTranscript(loop.deps.redis, keys, query, { limit }),
    requestCompaction: (focus) => { loop.manual = { focus }; },
    now: () => new Date(),
  };
}

/**
 * The notes the request shows: the snapshot of the last rewrite. A session compacted before
 * snapshots were recorded shows the current notes (its history may no longer hold the calls).
 */
async function shownNotes(loop: Loop): Promise<Record<string, string>> {
  const { notesSnapshot, compaction } = loop.turn.meta;
  if (notesSnapshot) return notesSnapshot;
  return (compaction?.compactions ?? 0) > 0 ? notesOf(loop).list() : {};
}

function notesOf(loop: Loop) {
  return createSessionNotes(loop.deps.redis, loop.deps.store.keys(loop.turn.sessionId));
}

function messageEvent(entry: StoredEntry, inboundId?: string, promptTokens?: number): TranscriptEntry {
  return {
    type: 'message', message: entry.message, tokens: entry.tokens, atMs: Date.now(),
    ...(inboundId ? { inboundId } : {}), ...(promptTokens ? { promptTokens } : {}),
  };
}

/** The limits this worker runs the session with; its meta remembers them for every other surface. */
function limitsOf(loop: Loop): SessionLimits {
  const { options, deps } = loop;
  return {
    model: deps.llm.model, summaryModel: options.summaryModel ?? deps.llm.model,
    contextWindow: options.contextWindow, reservedOutputTokens: options.reservedOutputTokens ?? 0,
  };
}

/** The channel of the turn's messages, for metric labels. */
function channelOf(loop: Loop): string {
  return loop.items[0]?.channel ?? 'unknown';
}

function metricsOf(loop: Loop): Metrics {
  return loop.deps.metrics ?? NOOP_METRICS;
}
