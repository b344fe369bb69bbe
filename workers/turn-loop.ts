import type { ContextCompressor } from '../src/core/compaction/compressor.js';
import type { InboundMessage, OutboundMessage } from '../src/core/inbound.js';
import type { ChatMessage } from '../src/core/messages.js';
import type { SessionLimits } from '../src/core/session-figures.js';
import { StaleCommitError } from '../src/errors.js';
import type { Logger } from '../src/log.js';
import type { LlmClient } from '../src/llm/client.js';
import { NOOP_METRICS, type Metrics } from '../src/metrics.js';
import type { RedisClient } from '../src/redis/client.js';
import { createSessionNotes, type SessionNotes } from '../src/redis/notes.js';
import type { SessionSnapshot, SessionStore, StoredEntry } from '../src/redis/session-store.js';
import type { StepLog } from '../src/redis/step-log.js';
import type { TranscriptEntry } from '../src/redis/transcript.js';
import type { PriceTable } from '../src/redis/usage.js';
import type { TurnState } from '../src/session/turn-state.js';
import type { ApprovalStore } from '../src/approvals/store.js';
import type { AttachmentReader } from './attachments.js';
import type { TurnLiveReplies } from './live-reply-publisher.js';
import { notesMessage, overheadTokens } from './model-request.js';
import type { ToolRegistry } from './tools/registry.js';

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
  /** How long an asked tool call waits for the user's decision, ms. Default 10 min (src/approvals/store.ts). */
  approvalTimeoutMs?: number;
  /** How long the images tools return stay in Redis, seconds. Default 86400 (`DEFAULT_ATTACHMENT_TTL_SECONDS`). */
  attachmentTtlSeconds?: number;
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

/** One running turn's state, passed to every step of the loop (never kept in a shared instance). */
export interface Loop {
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
  /** The budget's notices among `notices` (a limit at its notice share or used up by a call of the turn). */
  budgetNotices: string[];
  /** Compactions since the last model call; bounds compaction to one in-loop run per call. */
  compactionsSinceCall: number;
  lease?: LeaseGuard;
  /** The turn's identity across retries: the id of its first message. */
  turnId: string;
  /**
   * The ids its replies are named by (`replyJobId`): the messages this run started with. Messages
   * steered in later do not rename the reply, so it still settles the live reply started for it.
   */
  replyIds: readonly string[];
  steps: StepLog;
  /** This run wrote or found a round of the turn in its step log: it is cleared when the turn ends. */
  stepsKept: boolean;
  /** Data URLs of the images this turn's requests inline (read from Redis once per turn). */
  images: Map<string, string | null>;
  signal?: AbortSignal;
}

/** One model request of the turn: the messages, the tool schemas and the tokens of what precedes the history. */
export interface TurnRequest {
  messages: ChatMessage[];
  tools: ReturnType<ToolRegistry['schemas']>;
  overhead: number;
}

/** The request of the turn's next model call: system prompt, notes, history (images inlined), tools. */
export async function buildRequest(loop: Loop): Promise<TurnRequest> {
  const notes = notesMessage(await shownNotes(loop));
  const prefix = notes ? [loop.system, notes] : [loop.system];
  const tools = loop.deps.tools.schemas();
  const overhead = overheadTokens(prefix, tools, loop.deps.compressor.tokenCounter, loop.deps.llm.model);
  const history = loop.deps.attachments ? await loop.deps.attachments.inline(loop.turn.sessionId, loop.turn.messages(), loop.images) : loop.turn.messages();
  return { messages: [...prefix, ...history], tools, overhead };
}

/** @throws StaleCommitError when the session's lease is no longer ours: nothing more may be done for it. */
export async function ensureLease(loop: Loop, before: string): Promise<void> {
  loop.signal?.throwIfAborted();
  if (!loop.lease || (await loop.lease.confirm())) return;
  throw new StaleCommitError(loop.turn.sessionId, `the session lease was lost before the ${before}`);
}

/**
 * One outbound message of the turn, to the chat of its last inbound message. With `threaded`, in
 * a group chat it replies to that message (so the asker sees the answer is theirs); in private
 * chats a reply quote is noise, so never there.
 */
export function outbound(loop: Loop, id: string, text: string, kind: OutboundMessage['kind'], threaded = false): OutboundMessage {
  const last = loop.items[loop.items.length - 1]!;
  const message: OutboundMessage = { id, sessionId: loop.turn.sessionId, channel: last.channel, chatId: last.chatId, text, kind };
  if (last.threadId) message.threadId = last.threadId;
  if (threaded && last.chatType === 'group' && last.platformMessageId) message.replyTo = last.platformMessageId;
  return message;
}

/** The step log is only read by a retry of this turn, which no longer comes: dropping it is tidiness. */
export async function clearSteps(loop: Loop): Promise<void> {
  if (!loop.stepsKept) return;
  await loop.steps.clear().catch((err: unknown) => loop.log.warn({ err }, 'step log not cleared'));
}

/** The session's notes ledger. */
export function notesOf(loop: Loop): SessionNotes {
  return createSessionNotes(loop.deps.redis, loop.deps.store.keys(loop.turn.sessionId));
}

/** The transcript event of one stored message. */
export function messageEvent(entry: StoredEntry, inboundId?: string, promptTokens?: number): TranscriptEntry {
  return {
    type: 'message', message: entry.message, tokens: entry.tokens, atMs: Date.now(),
    ...(inboundId ? { inboundId } : {}), ...(promptTokens ? { promptTokens } : {}),
  };
}

/** The limits this worker runs the session with; its meta remembers them for every other surface. */
export function limitsOf(loop: Loop): SessionLimits {
  const { options, deps } = loop;
  return {
    model: deps.llm.model, summaryModel: options.summaryModel ?? deps.llm.model,
    contextWindow: options.contextWindow, reservedOutputTokens: options.reservedOutputTokens ?? 0,
  };
}

/** The channel of the turn's messages, for metric labels. */
export function channelOf(loop: Loop): string {
  return loop.items[0]?.channel ?? 'unknown';
}

export function metricsOf(loop: Loop): Metrics {
  return loop.deps.metrics ?? NOOP_METRICS;
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
