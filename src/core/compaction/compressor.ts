import type { CallScope } from '../budget.js';
import type { CompactionOutcome, CompactionResult, CompactionState, CompressOptions, Summarizer, SummaryOutput, SummaryRequest, SummaryUsage, NoteTools } from './compaction-types.js';
import { createCompactionState, recordCompaction, toCompactionState } from './compaction-state.js';
import { autoFocusOf, hasMiddleTurns, latestRequestOf, middleTurns, mineHistory, mustKeepFacts, selectPinned, watermarkOf } from './compaction-inputs.js';
import { factsOfMessage, presentFacts } from './facts.js';
import { DraftFitter, hasBlock, summaryText, type Draft } from './fit.js';
import { computeLayout, rangeTokens, systemPrefixEnd, type Layout } from './layout.js';
import { type ChatMessage } from '../messages.js';
import type { MessageMemos } from './message-memo.js';
import { pruneRange, trimToolResult } from './prune.js';
import { TAIL_TRIM_CHARS } from './layout.js';
import { cutChars, cutToTokens, fallbackSummary, findSummary, LATEST_REQUEST_CHARS, summaryRecordOf, summaryTargetCeiling, summaryTargetTokens, type LocatedSummary } from './summary-block.js';
import { isAbortingSummarizerError } from './summarizer-errors.js';
import { TokenCounter } from '../tokens.js';
import { stripUndefined } from '../option-checks.js';
import { DEFAULT_COMPRESS_THRESHOLD } from './hygiene.js';
import { placeholderOlderImages } from '../attachments.js';

/** Options of {@link ContextCompressor}. */
export interface CompressorOptions {
  /** The model's context window, in tokens. */
  contextWindow: number;
  /** Writes the handoff summary. */
  summarizer: Summarizer;
  /** Trigger as a share of (window − output reserve). Default 0.50. */
  threshold?: number;
  /** Tokens kept free for the model's answer. Default 0. */
  reservedOutputTokens?: number;
  /** Tail budget as a share of the trigger tokens. Default 0.20. */
  targetRatio?: number;
  /** Non-system messages protected at the start until the first compaction. Default 3. */
  protectFirstN?: number;
  /** The tail keeps at least this many messages while its token budget allows. Default 8. */
  protectLastN?: number;
  /** Model name, for the tokenizer's encoding. Default: o200k_base. */
  model?: string;
  /** Pause after a failed summariser before it is called again, in ms. Default 60 000. */
  summarizerCooldownMs?: number;
  /** Largest pinned section as a share of the trigger tokens. Default 0.10. */
  pinnedShare?: number;
  /** Clock, in ms since epoch: the cool-down and the summary's date read it. Default `Date.now`. */
  now?: () => number;
  /** The tools whose arguments are notes that are always pinned, and that remove them. Default remember/forget. */
  noteTools?: NoteTools;
  /**
   * Counts tokens and remembers what each message object yielded (its count, its facts). Pass the
   * process's counter to share what it remembers; default: a counter of this compressor's own,
   * which counts o200k_base models only (src/llm/encodings.ts `createTokenCounter` counts them all).
   */
  tokenCounter?: TokenCounter;
}

type ResolvedCompressorOptions = Required<Omit<CompressorOptions, 'model' | 'tokenCounter'>> & { model?: string };

const DEFAULTS = {
  threshold: DEFAULT_COMPRESS_THRESHOLD,
  reservedOutputTokens: 0,
  targetRatio: 0.08,
  protectFirstN: 3,
  protectLastN: 8,
  summarizerCooldownMs: 60_000,
  pinnedShare: 0.1,
  now: () => Date.now(),
  noteTools: { remember: 'remember', forget: 'forget' },
} satisfies Partial<ResolvedCompressorOptions>;

/** Share of the trigger a compacted history may use beyond the system prompt and the latest exchange. */
const AFTER_SHARE = 0.5;
/** Tokens of the summary block's markers. */
const BLOCK_FRAMING_TOKENS = 48;

/**
 * The compaction engine behind both layers (in-loop at 50%, gateway hygiene at 85%): collect facts,
 * prune, lay out head/middle/tail, summarise (iteratively), pin lost facts, assemble, make it fit.
 * Pure apart from the injected summariser, and stateless: a session's {@link CompactionState} goes in
 * with each call and comes back in the result, so one instance serves any number of concurrent turns.
 */
export class ContextCompressor {
  /** Trigger in tokens: floor((contextWindow − reservedOutputTokens) × threshold). */
  readonly thresholdTokens: number;
  /** Largest request allowed: contextWindow − reservedOutputTokens. */
  readonly limitTokens: number;
  private readonly options: ResolvedCompressorOptions;
  private readonly tokens: TokenCounter;
  private readonly fitter: DraftFitter;
  /** Kept messages per pruned history: each compress() call prunes into a fresh array, so entries never outlive it. */
  private readonly keptCache = new WeakMap<ChatMessage[], ChatMessage[]>();
  /** A pinned line's tokens per fact text (the same facts are pinned again and again). */
  private readonly pinnedLines = new Map<string, number>();

  /** @throws RangeError when an option is out of range, naming the option and the rule. */
  constructor(options: CompressorOptions) {
    const { tokenCounter, ...rest } = options;
    this.options = { ...DEFAULTS, ...stripUndefined(rest) } as ResolvedCompressorOptions;
    validate(this.options);
    this.tokens = tokenCounter ?? new TokenCounter();
    this.fitter = new DraftFitter(this.tokens, this.options.model);
    this.limitTokens = this.options.contextWindow - this.options.reservedOutputTokens;
    this.thresholdTokens = Math.floor(this.limitTokens * this.options.threshold);
  }

  /** The token counter this compressor counts with: count messages with it to share what it remembers. */
  get tokenCounter(): TokenCounter {
    return this.tokens;
  }

  /**
   * Whether a request of this size should be compacted: at or over the trigger unless automatic
   * compaction is paused for the session; always when it would not fit the window. `state` is the
   * session's compaction state; without one (a session never compacted) nothing is paused, as in compress().
   */
  shouldCompress(requestTokens: number, state?: CompactionState): boolean {
    if (requestTokens > this.limitTokens) return true;
    return state?.paused !== true && requestTokens >= this.thresholdTokens;
  }

  /**
   * Compacts a history. Never mutates its input; see {@link CompactionResult}. Pass the session's
   * state (`options.state`, default a fresh one) and store `result.state` with the new projection.
   */
  async compress(messages: ChatMessage[], options: CompressOptions = {}): Promise<CompactionResult> {
    return this.run(messages, toCompactionState(options.state ?? createCompactionState()), options);
  }

  private async run(messages: ChatMessage[], state: CompactionState, options: CompressOptions): Promise<CompactionResult> {
    const { model } = this.options;
    const tokensBefore = this.tokens.countMessages(messages, model);
    const requestTokens = Math.max(options.requestTokens ?? tokensBefore, tokensBefore);
    const overhead = requestTokens - tokensBefore;
    const force = options.force === true;
    const summary = findSummary(messages, state.summary, systemPrefixEnd(messages));
    const base: Base = { messages, tokensBefore, state, overhead, summary };
    if (!force && !this.shouldCompress(requestTokens, state)) {
      return this.unchanged(base, 'noop', state.paused ? 'automatic compaction is paused' : 'below the trigger');
    }
    const layout = computeLayout(messages, this.layoutOptions(), summary?.index ?? -1);
    const mined = { ...base, state: mineHistory(messages, state, summary, this.options.noteTools, this.tokens.memos) };
    const overLimit = requestTokens > this.limitTokens;
    const hasMiddle = hasMiddleTurns(messages, layout, summary);
    if (!hasMiddle && !overLimit) return this.unchanged(mined, 'noop', 'nothing between head and tail');

    const pruned = pruneRange(messages, layout.headEnd, layout.tailStart, this.tokens.memos);
    if (!force && hasMiddle) {
      // Only whether it is under the trigger matters: most of it was counted above.
      const prunedTokens = this.tokens.countMessagesUpTo(pruned, this.thresholdTokens - overhead, model);
      if (prunedTokens + overhead < this.thresholdTokens && !losesFacts(messages, pruned, layout.headEnd, layout.tailStart, this.tokens.memos)) {
        return this.finish(mined, pruned, 'pruned', [], 'pruning alone was enough', NO_CALL);
      }
    }
    return this.summarise(mined, pruned, layout, { force, overLimit, focus: options.focus, scope: options.scope });
  }

  private async summarise(base: Base, pruned: ChatMessage[], layout: Layout, flags: { force: boolean; overLimit: boolean; focus?: string; scope?: CallScope }): Promise<CompactionResult> {
    const { now } = this.options;
    const previous = base.summary;
    const turns = middleTurns(pruned, layout, previous);
    const latestRequest = latestRequestOf(turns) ?? previous?.latestRequest ?? null;
    let body: string | null = previous?.body ?? null;
    let outcome: CompactionOutcome = 'compacted';
    let reason = 'summarised';
    let call: SummarizerCall = NO_CALL;
    let state = base.state;
    if (turns.length === 0) {
      const draft = this.draft(base, pruned, layout, body, latestRequest);
      return this.finishDraft(base, draft, layout, 'fallback', 'over the window with nothing to summarise', call);
    }
    const coolingDown = !flags.force && state.cooldownUntilMs > now();
    if (coolingDown && state.cooldownAborts && !flags.overLimit) {
      // The summariser was unreachable or refused us: keep the history as it is, as that call would have.
      return this.unchanged(base, 'aborted', 'summariser cooling down after it was unreachable or unauthorised');
    }
    const started = now();
    const attempt = coolingDown ? null : await callSummarizer(this.options.summarizer, this.summaryRequest(base, pruned, layout, turns, flags, latestRequest));
    call = { ms: coolingDown ? 0 : Math.max(0, now() - started), usage: attempt && 'text' in attempt ? attempt.usage : undefined };
    if (attempt && 'text' in attempt) {
      body = attempt.text;
      state = { ...state, summarizerFailures: 0, cooldownUntilMs: 0, cooldownAborts: false };
    } else {
      const aborting = attempt !== null && isAbortingSummarizerError(attempt.error);
      if (aborting && !flags.overLimit) {
        return this.unchanged({ ...base, state: this.failedSummarizer(state, true) }, 'aborted', `summariser unreachable or unauthorised: ${errorText(attempt.error)}`);
      }
      if (attempt) state = this.failedSummarizer(state, aborting);
      body = fallbackSummary(turns, previous?.body ?? null);
      outcome = 'fallback';
      reason = coolingDown ? 'summariser cooling down after a failure' : attempt ? `summariser failed: ${errorText(attempt.error)}` : 'summariser returned nothing';
    }
    const draft = this.draft({ ...base, state }, pruned, layout, body, latestRequest);
    return this.finishDraft({ ...base, state }, draft, layout, outcome, reason, call);
  }

  private summaryRequest(base: Base, pruned: ChatMessage[], layout: Layout, turns: ChatMessage[], { focus, scope }: { focus?: string; scope?: CallScope }, latestRequest: string | null): SummaryRequest {
    const { model, contextWindow, now } = this.options;
    const previousSummary = base.summary?.body ?? null;
    const kept = presentFacts(this.keptMessages(pruned, layout), this.tokens.memos);
    const request: SummaryRequest = {
      turns, previousSummary, focus,
      targetTokens: summaryTargetTokens(this.tokens.countMessagesUpTo(turns, summaryTargetCeiling(contextWindow), model), contextWindow),
      // Candidates come from the original turns: a pruned tool result no longer shows what it held.
      mustKeep: mustKeepFacts(base.messages, layout.headEnd, layout.tailStart, previousSummary, base.state.facts, kept, this.tokens.memos),
      today: new Date(now()).toISOString().slice(0, 10),
    };
    if (!focus) {
      const autoFocus = autoFocusOf(base.messages);
      if (autoFocus) request.autoFocus = autoFocus;
    }
    if (latestRequest) request.latestRequest = latestRequest;
    if (scope) request.scope = scope;
    return request;
  }

  /** Head and tail as the draft keeps them (tail tool results trimmed where the layout says); once per pruned history. */
  private keptMessages(pruned: ChatMessage[], layout: Layout): ChatMessage[] {
    const cached = this.keptCache.get(pruned);
    if (cached) return cached;
    const trimmed = new Set(layout.trimmed);
    const tail = pruned.slice(layout.tailStart).map((m, k) =>
      m.role === 'tool' && trimmed.has(layout.tailStart + k) ? { ...m, content: trimToolResult(m.content, TAIL_TRIM_CHARS, factsOfMessage(m, this.tokens.memos)) } : m,
    );
    const kept = [...pruned.slice(0, layout.headEnd), ...tail];
    this.keptCache.set(pruned, kept);
    return kept;
  }

  private draft(base: Base, pruned: ChatMessage[], layout: Layout, rawBody: string | null, rawRequest: string | null): Draft {
    const { model } = this.options;
    const kept = this.keptMessages(pruned, layout);
    const head = kept.slice(0, layout.headEnd);
    const tail = kept.slice(layout.headEnd);
    const body = rawBody === null ? null : cutToTokens(rawBody.trim(), this.summaryCap(), this.tokens, model);
    // Cut as the block will show it, so that a fact beyond the cut is pinned, not assumed kept.
    const latestRequest = rawRequest === null ? null : cutChars(rawRequest.trim(), LATEST_REQUEST_CHARS);
    const present = presentFacts(kept, this.tokens.memos);
    const written = `${body ?? ''}\n${latestRequest ?? ''}`;
    const cap = Math.floor(this.options.pinnedShare * this.thresholdTokens);
    const { pinned, omitted } = selectPinned(base.state.facts, (fact) => present.has(fact) || written.includes(fact), cap, this.pinnedLineTokens);
    return {
      head, systemCount: layout.systemEnd, body, latestRequest, pinned, omitted, tail,
      exchangeOffset: Math.max(0, layout.exchangeStart - layout.tailStart),
    };
  }

  private repin(base: Base, draft: Draft): Draft {
    const present = presentFacts([...draft.head, ...draft.tail], this.tokens.memos);
    const written = `${draft.body ?? ''}\n${draft.latestRequest ?? ''}`;
    const cap = Math.floor(this.options.pinnedShare * this.thresholdTokens);
    return { ...draft, ...selectPinned(base.state.facts, (fact) => present.has(fact) || written.includes(fact), cap, this.pinnedLineTokens) };
  }

  private finishDraft(base: Base, draft: Draft, layout: Layout, outcome: CompactionOutcome, reason: string, call: SummarizerCall): CompactionResult {
    const { model } = this.options;
    const { fitter, tokens } = this;
    const messages = base.messages;
    const hard = this.limitTokens - base.overhead;
    const goal = Math.floor(AFTER_SHARE * this.thresholdTokens) +
      rangeTokens(messages, 0, layout.systemEnd, tokens, model) + rangeTokens(messages, layout.exchangeStart, messages.length, tokens, model);
    // The soft goal never costs a pinned fact; only the window's hard limit may shrink the section.
    let fitted = fitter.fit(draft, Math.min(hard, goal), goal < hard);
    // Fitting trims and drops tail messages: pin again what they alone held, then fit once more.
    if (fitted !== draft) fitted = fitter.fit(this.repin(base, fitted), Math.min(hard, goal), goal < hard);
    if (fitter.draftTokens(fitted) > hard) fitted = fitter.fit(fitted, hard);
    let out = fitter.render(fitted);
    if (tokens.countMessages(out, model) > base.tokensBefore) {
      fitted = fitter.fit(fitted, base.tokensBefore);
      out = fitter.render(fitted);
      if (tokens.countMessages(out, model) > base.tokensBefore) {
        return this.unchanged(base, 'noop', 'compaction would not make the history smaller');
      }
    }
    const block = hasBlock(fitted) ? summaryText(fitted) : null;
    const state: CompactionState = { ...base.state, pinsOmitted: fitted.omitted, summary: block === null ? null : summaryRecordOf(block) };
    return this.finish({ ...base, state }, out, outcome, fitted.pinned, reason, call, block);
  }

  private finish(base: Base, compacted: ChatMessage[], outcome: CompactionOutcome, pinnedFacts: string[], reason: string, call: SummarizerCall, block?: string | null): CompactionResult {
    // Images before the current exchange become one line each (the transcript keeps their reference).
    const out = placeholderOlderImages(compacted);
    const tokensAfter = this.tokens.countMessages(out, this.options.model);
    const effective = tokensAfter + base.overhead < this.thresholdTokens;
    const recorded = recordCompaction({ ...base.state, mined: watermarkOf(out) }, outcome, effective);
    return {
      messages: out, outcome, summary: block === undefined ? (base.summary?.block ?? null) : block, tokensBefore: base.tokensBefore, tokensAfter,
      requestTokensBefore: base.tokensBefore + base.overhead, requestTokensAfter: tokensAfter + base.overhead,
      pinnedFacts, state: recorded.state, pausedNow: recorded.pausedNow, reason, summarizerMs: call.ms,
      ...(call.usage ? { summarizerUsage: call.usage } : {}),
    };
  }

  private unchanged(base: Base, outcome: 'noop' | 'aborted', reason: string): CompactionResult {
    return {
      messages: base.messages.slice(), outcome, summary: base.summary?.block ?? null,
      tokensBefore: base.tokensBefore, tokensAfter: base.tokensBefore, pinnedFacts: [],
      requestTokensBefore: base.tokensBefore + base.overhead, requestTokensAfter: base.tokensBefore + base.overhead,
      state: { ...base.state, lastOutcome: outcome }, pausedNow: false, reason, summarizerMs: 0,
    };
  }

  private failedSummarizer(state: CompactionState, aborting: boolean): CompactionState {
    const failures = state.summarizerFailures + 1;
    const backoff = this.options.summarizerCooldownMs * Math.min(2 ** (failures - 1), 8);
    return { ...state, summarizerFailures: failures, cooldownUntilMs: this.options.now() + backoff, cooldownAborts: aborting };
  }

  /** A pinned line's tokens, counted once per fact text (an arrow: handed to selectPinned). */
  private readonly pinnedLineTokens = (fact: string): number => {
    let tokens = this.pinnedLines.get(fact);
    if (tokens === undefined) {
      tokens = this.tokens.countText(`- ${fact}\n`, this.options.model);
      if (this.pinnedLines.size >= 50_000) this.pinnedLines.clear();
      this.pinnedLines.set(fact, tokens);
    }
    return tokens;
  };

  private summaryCap(): number {
    const { contextWindow } = this.options;
    const ceiling = Math.max(2000, Math.min(0.05 * contextWindow, 12000));
    return Math.max(64, Math.floor(Math.min(ceiling, 0.3 * this.thresholdTokens)) - BLOCK_FRAMING_TOKENS);
  }

  private layoutOptions() {
    const { targetRatio, protectFirstN, protectLastN, pinnedShare, model } = this.options;
    const t = this.thresholdTokens;
    const room = Math.max(0, AFTER_SHARE * t - this.summaryCap() - BLOCK_FRAMING_TOKENS - pinnedShare * t);
    const tailCeiling = Math.floor(Math.min(1.5 * targetRatio * t, room));
    return { protectFirstN, protectLastN, tailBudget: Math.floor(Math.min(targetRatio * t, tailCeiling / 1.5)), tailCeiling, maxHeadTokens: Math.floor(0.1 * t), tokens: this.tokens, model };
  }
}

/** What a summariser call cost: its duration and, when reported, its tokens. */
interface SummarizerCall {
  ms: number;
  usage?: SummaryUsage;
}

const NO_CALL: SummarizerCall = { ms: 0 };

interface Base {
  messages: ChatMessage[];
  tokensBefore: number;
  state: CompactionState;
  overhead: number;
  /** The engine's own summary block in `messages`, if any. */
  summary: LocatedSummary | null;
}

function losesFacts(before: readonly ChatMessage[], after: readonly ChatMessage[], from: number, to: number, memos: MessageMemos): boolean {
  const present = presentFacts(after, memos);
  for (let i = from; i < to; i++) {
    if (before[i] === after[i]) continue;
    for (const fact of factsOfMessage(before[i]!, memos)) if (!present.has(fact)) return true;
  }
  return false;
}

async function callSummarizer(summarizer: Summarizer, request: SummaryRequest): Promise<SummaryOutput | { error: unknown } | null> {
  try {
    const answer = await summarizer.summarize(request);
    const output: SummaryOutput = typeof answer === 'string' ? { text: answer } : answer;
    if (typeof output?.text !== 'string' || output.text.trim() === '') return null;
    return output;
  } catch (error) {
    return { error };
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}


function validate(o: ResolvedCompressorOptions): void {
  const rules: Array<[boolean, string]> = [
    [Number.isInteger(o.contextWindow) && o.contextWindow > 0, `\`contextWindow\` must be a positive integer (got ${o.contextWindow})`],
    [o.threshold > 0 && o.threshold <= 1, `\`threshold\` must be in (0, 1] (got ${o.threshold})`],
    [o.reservedOutputTokens >= 0 && o.reservedOutputTokens < o.contextWindow, `\`reservedOutputTokens\` must be in [0, contextWindow) (got ${o.reservedOutputTokens})`],
    [o.targetRatio > 0 && o.targetRatio < 1, `\`targetRatio\` must be in (0, 1) (got ${o.targetRatio})`],
    [Number.isInteger(o.protectFirstN) && o.protectFirstN >= 0, `\`protectFirstN\` must be a whole number ≥ 0 (got ${o.protectFirstN})`],
    [Number.isInteger(o.protectLastN) && o.protectLastN >= 1, `\`protectLastN\` must be a whole number ≥ 1 (got ${o.protectLastN})`],
    [typeof o.summarizer?.summarize === 'function', '`summarizer` must have a summarize(request) method'],
  ];
  const broken = rules.filter(([ok]) => !ok).map(([, message]) => message);
  if (broken.length > 0) throw new RangeError(broken.join('; '));
}
