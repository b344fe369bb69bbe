import { recordCommittedUsage } from '../usage/usage-metrics.js';
import type { UsageRetention } from '../redis/session-store.js';
import { ContextCompressor } from '../core/compaction/compressor.js';
import { createLlmClient, type LlmClient } from '../llm/client.js';
import { createSummarizer } from '../llm/summarizer.js';
import type { CompactionResult } from '../core/compaction/compaction-types.js';
import { createCompactionState } from '../core/compaction/compaction-state.js';
import { decideHygiene } from '../core/compaction/hygiene.js';
import type { InboundMessage } from '../core/inbound.js';
import type { ChatMessage } from '../core/messages.js';
import type { TokenCounter } from '../core/tokens.js';
import { createTokenCounter } from '../llm/encodings.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { RedisClient } from '../redis/client.js';
import { readHygieneFigures, type HygieneFigures } from '../redis/hygiene-figures.js';
import { holdLease } from '../redis/lease.js';
import { createSessionNotes } from '../redis/notes.js';
import { createSessionStore, parseMeta, requestTokens, type SessionMeta, type SessionStore } from '../redis/session-store.js';
import type { PriceTable } from '../core/models.js';
import type { CompactionLayer, SessionLimits } from '../core/session-figures.js';
import { runCompactionStep } from './compaction-step.js';
import { TurnState } from './turn-state.js';

/** Default system prompt of the agent (the first message of every request). */
export const DEFAULT_SYSTEM_PROMPT = 'You are a helpful assistant in a chat. Answer concisely. Use the tools when they help; use remember for facts the user wants kept.';

/** What the gateway's session operations (hygiene, /compact, /reset) need. */
export interface SessionOpsDeps {
  redis: RedisClient;
  store: SessionStore;
  /** A compressor for the session's limits, summarising with its summary model (one per operation: it keeps state). */
  createCompressor: (limits: SessionLimits) => ContextCompressor;
  logger: Logger;
  /** Where compactions are counted. Default: nowhere. */
  metrics?: Metrics;
}

/** Options of the session operations. */
export interface SessionOpsOptions {
  systemPrompt: string;
  /**
   * Limits of sessions whose meta records none; a session that recorded its own (the worker writes
   * them every turn) is compacted with those, whatever this process is configured with.
   */
  limits: SessionLimits;
  /** Gateway hygiene trigger as a share of (window − reserve). */
  hygieneThreshold: number;
  /** Lease TTL while the gateway compacts, ms. */
  leaseTtlMs: number;
  /** The configured prices (`CHATGATE_PRICES` over the known table), as the workers have them: what a summary costs. */
  prices?: PriceTable;
}

/** The result of an operation that needs the session idle: `busy` when a worker holds it. */
export type IdleResult<T> = { busy: true } | { busy: false; value: T };

/** Gateway-side operations on a session, each under the session's lease. */
export interface SessionOps {
  /**
   * The 85% check before dispatch: when the session is idle, has ≥ 4 messages and its next request
   * is at or over the hygiene line, compacts it (layer `hygiene`). Returns null when it did not run.
   * `figures`: the pre-check's reads when the caller has them already (the ingest script returns
   * them with the accept); a session over the line is checked again under its lease either way.
   * `user` (`<channel>:<userId>`): whom the summary counts for in the budgets beside the chat.
   */
  hygiene(sessionId: string, figures?: HygieneFigures, user?: string): Promise<CompactionResult | null>;
  /** A forced compaction (`/compact`, the CLI); its summary counts for `user` (the sender of `/compact`) and the chat. */
  compact(sessionId: string, options?: { focus?: string; layer?: CompactionLayer; user?: string }): Promise<IdleResult<CompactionResult>>;
  /**
   * Empties the projection and the compaction state and drops the tool grants; the transcript keeps
   * everything. A turn waiting for approval ends with the old conversation when `cancelQuestions` cancelled any.
   */
  reset(sessionId: string, options?: ResetOptions): Promise<IdleResult<{ removedMessages: number; cancelledCalls: number }>>;
}

/** Options of {@link SessionOps.reset}. */
export interface ResetOptions {
  /**
   * Cancels the session's open approval questions and wakes their turn (`denyPending` of
   * src/gateway/approval-commands.ts), run under the lease before the reset. @returns how many it
   * cancelled. Absent: a waiting turn resumes in the fresh conversation once its questions are decided.
   */
  cancelQuestions?: () => Promise<number>;
}

/** Options of {@link createLlmSessionOps}: the summariser's endpoint, the triggers and the default limits. */
export interface LlmSessionOpsOptions extends Omit<SessionOpsOptions, 'systemPrompt'> {
  /** OpenAI-compatible endpoint of the summariser. */
  baseURL: string;
  apiKey?: string;
  /** In-loop trigger the compressors are built with, share of (window − reserve). */
  threshold: number;
  /** Default {@link DEFAULT_SYSTEM_PROMPT}. */
  systemPrompt?: string;
  /** Session key prefix (for the store built when `deps.store` is absent). */
  keyPrefix: string;
  transcriptRetention?: number;
  /** Days the usage rollups are kept (hourly, daily). Default: the store's (14, 400). */
  usageRetention?: UsageRetention;
  /** Bounds one summariser call (the gateway's hygiene must not hold a chat for minutes), ms. */
  llmTimeoutMs?: number;
  llmMaxRetries?: number;
  /** Whether the summariser's calls stream (`CHATGATE_LIVE_REPLIES`). Default true. */
  llmStream?: boolean;
}

/**
 * The session operations with a summariser on `options.baseURL` and compressors with each
 * session's recorded limits (`options.limits` for sessions without), summarising with its summary model.
 */
export function createLlmSessionOps(
  deps: {
    redis: RedisClient; logger: Logger; store?: SessionStore; metrics?: Metrics; tokenCounter?: TokenCounter;
    /** The budget wrapper of the summariser's client (src/budget/guard.ts), when budgets are on. */
    guardLlm?: (llm: LlmClient) => LlmClient;
  },
  options: LlmSessionOpsOptions,
): SessionOps {
  const { logger } = deps;
  // One counter for every compressor of these operations: a GPT-3.5/4 session loads cl100k_base once.
  const tokenCounter = deps.tokenCounter ?? createTokenCounter([options.limits.model]);
  const store = deps.store ?? createSessionStore({ redis: deps.redis, logger, onCommitted: recordCommittedUsage(deps.metrics) }, { keyPrefix: options.keyPrefix, transcriptRetention: options.transcriptRetention, usageRetention: options.usageRetention });
  const client = createLlmClient({
    baseURL: options.baseURL, apiKey: options.apiKey, model: options.limits.model,
    timeoutMs: options.llmTimeoutMs, retry: options.llmMaxRetries === undefined ? undefined : { maxRetries: options.llmMaxRetries }, stream: options.llmStream,
  }, { logger });
  const llm = deps.guardLlm ? deps.guardLlm(client) : client;
  return createSessionOps({
    redis: deps.redis, store, logger, metrics: deps.metrics,
    createCompressor: (limits) => new ContextCompressor({
      contextWindow: limits.contextWindow, threshold: options.threshold, reservedOutputTokens: limits.reservedOutputTokens, model: limits.model,
      summarizer: createSummarizer({ llm, logger }, { summaryModel: limits.summaryModel }), tokenCounter,
    }),
  }, {
    systemPrompt: options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT, limits: options.limits,
    hygieneThreshold: options.hygieneThreshold, leaseTtlMs: options.leaseTtlMs, prices: options.prices,
  });
}

/** Creates the gateway's session operations. */
export function createSessionOps(deps: SessionOpsDeps, options: SessionOpsOptions): SessionOps {
  const log = deps.logger.child({ component: 'session-ops' });
  const system: ChatMessage = { role: 'system', content: options.systemPrompt };

  async function underLease<T>(sessionId: string, work: (turn: TurnState) => Promise<T>, user?: string): Promise<IdleResult<T>> {
    const keys = deps.store.keys(sessionId);
    // Renewed while the work runs, so a slow summary keeps the session; a dead gateway frees it soon.
    const lease = await holdLease(deps.redis, keys, options.leaseTtlMs);
    if (lease === null) return { busy: true };
    try {
      const snapshot = await deps.store.load(sessionId);
      // The summariser's calls count for this chat (and for the user the caller named, if any); the rollups name no user.
      const value = await work(new TurnState(deps.store, sessionId, snapshot, lease.fence, undefined, { chat: sessionId, ...(user ? { user } : {}) }));
      return { busy: false, value };
    } finally {
      await lease.release();
    }
  }

  const limitsOf = (meta: Pick<SessionMeta, 'limits'>): SessionLimits => meta.limits ?? options.limits;
  const compactTurn = (turn: TurnState, layer: CompactionLayer, force: boolean, focus?: string, pending: ChatMessage[] = [], compressor = deps.createCompressor(limitsOf(turn.meta))) =>
    runCompactionStep({
      compressor, turn, system, requestTokens: requestTokens({ meta: turn.meta }) + countPending(pending, compressor.tokenCounter, limitsOf(turn.meta).model),
      layer, force, focus, pending, summaryModel: limitsOf(turn.meta).summaryModel, model: limitsOf(turn.meta).model, logger: log.child({ sessionId: turn.sessionId }), metrics: deps.metrics, prices: options.prices,
      notes: () => createSessionNotes(deps.redis, deps.store.keys(turn.sessionId)).list(),
      // A hygiene check that finds nothing to do leaves no trace; forced compactions always do.
      commitNoop: force,
    });

  return {
    async hygiene(sessionId, figures, user) {
      if (!(await overHygieneLine(deps, sessionId, options, figures))) return null;
      const result = await underLease(sessionId, async (turn) => {
        // Read under the lease: a turn that ran meanwhile has taken (and answered) what was waiting.
        const pending = await pendingMessages(deps, sessionId);
        const limits = limitsOf(turn.meta);
        const compressor = deps.createCompressor(limits);
        const tokens = requestTokens({ meta: turn.meta }) + countPending(pending, compressor.tokenCounter, limits.model);
        if (!decide(turn.entries.length, tokens, limits, options).compact || !compressor.shouldCompress(tokens, turn.compaction)) return null;
        const compacted = await compactTurn(turn, 'hygiene', false, undefined, pending, compressor);
        return compacted.outcome === 'noop' ? null : compacted;
      }, user);
      return result.busy ? null : result.value;
    },
    compact(sessionId, { focus, layer = 'manual', user } = {}) {
      return underLease(sessionId, (turn) => compactTurn(turn, layer, true, focus), user);
    },
    reset(sessionId, { cancelQuestions } = {}) {
      return underLease(sessionId, async (turn) => {
        const keys = deps.store.keys(sessionId);
        const removedMessages = turn.entries.length;
        // Cancelled first: a crash before the reset leaves the questions denied (their turn resumes and is told) and the old context.
        const cancelledCalls = (await cancelQuestions?.()) ?? 0;
        // A fresh conversation starts with no "always" approvals (gone first: a crash leaves fewer grants, never more).
        await deps.redis.del(keys.grants);
        // A crashed turn's messages still in `processing` are appended again by its retry: forget
        // that they were already in the old projection. A turn whose questions were cancelled ends
        // here instead: its messages leave with the old context (the decisions' wake-up finds nothing to resume).
        await turn.replace([], createCompactionState(), {
          meta: { turnInboundIds: [], heldNotices: [], limits: limitsOf(turn.meta), notesSnapshot: await createSessionNotes(deps.redis, keys).list() },
          transcript: [{ type: 'reset', removedMessages, tokensBefore: turn.meta.projectionTokens, atMs: Date.now() }],
          usage: { incr: { resets: 1 }, set: {} },
          finishTurn: cancelledCalls > 0,
        });
        // Its round too: a step log left behind would hold the next turn (workers/turn-job.ts `waitsForDecision`).
        if (cancelledCalls > 0) await deps.redis.del(keys.steps);
        log.info({ sessionId, removedMessages, cancelledCalls }, 'session reset');
        return { removedMessages, cancelledCalls };
      });
    },
  };
}

function decide(messageCount: number, tokens: number, limits: SessionLimits, options: SessionOpsOptions) {
  return decideHygiene({
    messageCount, requestTokens: tokens, contextWindow: limits.contextWindow,
    threshold: options.hygieneThreshold, reservedOutputTokens: limits.reservedOutputTokens,
  });
}

/**
 * The inbox as one user message (the latest one, which the compressor keeps verbatim and last), or
 * nothing when the inbox is empty.
 */
async function pendingMessages(deps: SessionOpsDeps, sessionId: string): Promise<ChatMessage[]> {
  const raw = await deps.redis.lrange(deps.store.keys(sessionId).inbox, 0, -1);
  if (raw.length === 0) return [];
  return [{ role: 'user', content: raw.map((item) => (JSON.parse(item) as InboundMessage).text).join('\n\n') }];
}

function countPending(pending: readonly ChatMessage[], counter: TokenCounter, model: string): number {
  return pending.reduce((sum, message) => sum + counter.messageTokens(message, model), 0);
}

/**
 * Cheap pre-check from the meta hash, the history length and the inbox size alone (`figures` when
 * the caller has them, else read now), so most messages never load the projection; waiting
 * messages are estimated at their serialized size (an upper bound).
 */
async function overHygieneLine(deps: SessionOpsDeps, sessionId: string, options: SessionOpsOptions, figures?: HygieneFigures): Promise<boolean> {
  const { meta: raw, historyLength, inboxBytes } = figures ?? await readHygieneFigures(deps.redis, deps.store.keys(sessionId));
  const meta = parseMeta(raw as Record<string, string>);
  return decide(historyLength, requestTokens({ meta }) + Math.ceil(inboxBytes / 3), meta.limits ?? options.limits, options).compact;
}
