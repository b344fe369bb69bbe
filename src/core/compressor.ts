import type { CompactionOutcome, CompactionResult, CompactionState, CompressOptions, Summarizer, SummaryOutput, SummaryUsage } from './compaction-types.js';
import { createCompactionState, recordCompaction, toCompactionState } from './compaction-state.js';
import { factsNewestFirst, factsOfMessage, mineFacts, presentFacts } from './facts.js';
import { fitDraft, renderDraft, summaryText, type Draft } from './fit.js';
import { computeLayout, rangeTokens, type Layout } from './layout.js';
import { messageText, type ChatMessage } from './messages.js';
import { pruneRange, trimToolResult } from './prune.js';
import { TAIL_TRIM_CHARS } from './layout.js';
import { cutToTokens, fallbackSummary, parseSummary, summaryTargetTokens } from './summary-block.js';
import { isAbortingSummarizerError } from './summarizer-errors.js';
import { countMessageTokens, countTextTokens } from './tokens.js';
import { stripUndefined } from './objects.js';

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
  /** Clock, in ms since epoch; only the cool-down reads it. Default `Date.now`. */
  now?: () => number;
}

type ResolvedCompressorOptions = Required<Omit<CompressorOptions, 'model'>> & { model?: string };

const DEFAULTS = {
  threshold: 0.5,
  reservedOutputTokens: 0,
  targetRatio: 0.2,
  protectFirstN: 3,
  protectLastN: 8,
  summarizerCooldownMs: 60_000,
  pinnedShare: 0.1,
  now: () => Date.now(),
} satisfies Partial<ResolvedCompressorOptions>;

/** Share of the trigger a compacted history may use beyond the system prompt and the latest exchange. */
const AFTER_SHARE = 0.5;
/** Tokens of the summary block's markers. */
const BLOCK_FRAMING_TOKENS = 48;

/**
 * The compaction engine behind both layers (in-loop at 50%, gateway hygiene at 85%): collect facts,
 * prune, lay out head/middle/tail, summarise (iteratively), pin lost facts, assemble, make it fit.
 * Pure apart from the injected summariser; keeps the last state it produced as the default for the
 * next call (`shouldCompress`, `compress`), so one instance can serve one session.
 */
export class ContextCompressor {
  /** Trigger in tokens: floor((contextWindow − reservedOutputTokens) × threshold). */
  readonly thresholdTokens: number;
  /** Largest request allowed: contextWindow − reservedOutputTokens. */
  readonly limitTokens: number;
  /** The state after the last `compress` call (or a fresh one). */
  state: CompactionState = createCompactionState();
  private readonly options: ResolvedCompressorOptions;

  /** @throws RangeError when an option is out of range, naming the option and the rule. */
  constructor(options: CompressorOptions) {
    this.options = { ...DEFAULTS, ...stripUndefined(options) } as ResolvedCompressorOptions;
    validate(this.options);
    this.limitTokens = this.options.contextWindow - this.options.reservedOutputTokens;
    this.thresholdTokens = Math.floor(this.limitTokens * this.options.threshold);
  }

  /**
   * Whether a request of this size should be compacted: at or over the trigger unless automatic
   * compaction is paused for the session; always when it would not fit the window.
   */
  shouldCompress(requestTokens: number, state: CompactionState = this.state): boolean {
    if (requestTokens > this.limitTokens) return true;
    return !state.paused && requestTokens >= this.thresholdTokens;
  }

  /** Compacts a history. Never mutates its input; see {@link CompactionResult}. */
  async compress(messages: ChatMessage[], options: CompressOptions = {}): Promise<CompactionResult> {
    const state = toCompactionState(options.state ?? this.state);
    const result = await this.run(messages, state, options);
    this.state = result.state;
    return result;
  }

  private async run(messages: ChatMessage[], state: CompactionState, options: CompressOptions): Promise<CompactionResult> {
    const { model } = this.options;
    const tokensBefore = countMessageTokens(messages, model);
    const requestTokens = Math.max(options.requestTokens ?? tokensBefore, tokensBefore);
    const overhead = requestTokens - tokensBefore;
    const force = options.force === true;
    const base = { messages, tokensBefore, state, overhead };
    if (!force && !this.shouldCompress(requestTokens, state)) {
      return this.unchanged(base, 'noop', state.paused ? 'automatic compaction is paused' : 'below the trigger');
    }
    const layout = computeLayout(messages, this.layoutOptions());
    const mined = mineFacts(messages, state.facts, state.factClock, layout.summaryIndex);
    const minedState: CompactionState = { ...state, facts: mined.facts, factClock: mined.clock };
    const overLimit = requestTokens > this.limitTokens;
    const middleEnd = layout.tailStart;
    const hasMiddle = middleTurns(messages, layout).length > 0;
    if (!hasMiddle && !overLimit) return this.unchanged({ ...base, state: minedState }, 'noop', 'nothing between head and tail');

    const pruned = pruneRange(messages, layout.headEnd, middleEnd);
    if (!force && hasMiddle) {
      const prunedTokens = countMessageTokens(pruned, model);
      if (prunedTokens + overhead < this.thresholdTokens && !losesFacts(messages, pruned, layout.headEnd, middleEnd)) {
        return this.finish({ ...base, state: minedState }, pruned, 'pruned', null, [], 'pruning alone was enough', NO_CALL);
      }
    }
    return this.summarise({ ...base, state: minedState }, pruned, layout, { force, overLimit, focus: options.focus });
  }

  private async summarise(
    base: Base,
    pruned: ChatMessage[],
    layout: Layout,
    flags: { force: boolean; overLimit: boolean; focus?: string },
  ): Promise<CompactionResult> {
    const { model, contextWindow, now } = this.options;
    const previous = layout.summaryIndex >= 0 ? parseSummary(base.messages[layout.summaryIndex]) : null;
    const turns = middleTurns(pruned, layout);
    let body: string | null = previous?.body ?? null;
    let outcome: CompactionOutcome = 'compacted';
    let reason = 'summarised';
    let call: SummarizerCall = NO_CALL;
    let state = base.state;
    if (turns.length > 0) {
      const targetTokens = summaryTargetTokens(countMessageTokens(turns, model), contextWindow);
      const coolingDown = !flags.force && state.cooldownUntilMs > now();
      if (coolingDown && state.cooldownAborts && !flags.overLimit) {
        // The summariser was unreachable or refused us: keep the history as it is, as that call would have.
        return this.unchanged({ ...base, state }, 'aborted', 'summariser cooling down after it was unreachable or unauthorised');
      }
      const started = now();
      const attempt = coolingDown ? null : await callSummarizer(this.options.summarizer, {
        turns, previousSummary: previous?.body ?? null, focus: flags.focus, targetTokens,
      });
      call = { ms: coolingDown ? 0 : Math.max(0, now() - started), usage: attempt && 'text' in attempt ? attempt.usage : undefined };
      if (attempt && 'text' in attempt) {
        body = attempt.text;
        state = { ...state, summarizerFailures: 0, cooldownUntilMs: 0, cooldownAborts: false };
      } else {
        if (attempt && isAbortingSummarizerError(attempt.error) && !flags.overLimit) {
          const failed = this.failedSummarizer(state, true);
          return this.unchanged({ ...base, state: failed }, 'aborted', `summariser unreachable or unauthorised: ${errorText(attempt.error)}`);
        }
        if (attempt) state = this.failedSummarizer(state, attempt && 'error' in attempt && isAbortingSummarizerError(attempt.error));
        body = fallbackSummary(turns, previous?.body ?? null);
        outcome = 'fallback';
        reason = coolingDown ? 'summariser cooling down after a failure' : attempt && 'error' in attempt ? `summariser failed: ${errorText(attempt.error)}` : 'summariser returned nothing';
      }
    } else {
      outcome = 'fallback';
      reason = 'over the window with nothing to summarise';
    }
    const draft = this.draft({ ...base, state }, pruned, layout, body);
    return this.finishDraft({ ...base, state }, draft, layout, outcome, reason, call);
  }

  private draft(base: Base, pruned: ChatMessage[], layout: Layout, rawBody: string | null): Draft {
    const { model } = this.options;
    const trimmed = new Set(layout.trimmed);
    const tail = pruned.slice(layout.tailStart).map((m, k) =>
      m.role === 'tool' && trimmed.has(layout.tailStart + k) ? { ...m, content: trimToolResult(m.content, TAIL_TRIM_CHARS, factsOfMessage(m)) } : m,
    );
    const head = pruned.slice(0, layout.headEnd);
    const body = rawBody === null ? null : cutToTokens(rawBody.trim(), this.summaryCap(), model);
    const present = presentFacts([...head, ...tail]);
    const summaryLower = body ?? '';
    const missing = factsNewestFirst(base.state.facts, (f) => !present.has(f) && !summaryLower.includes(f));
    const pinned: string[] = [];
    let used = 0;
    const cap = Math.floor(this.options.pinnedShare * this.thresholdTokens);
    for (const fact of missing) {
      const cost = pinnedLineTokens(fact, model);
      if (used + cost > cap) continue;
      used += cost;
      pinned.push(fact);
    }
    return {
      head,
      systemCount: layout.systemEnd,
      body,
      pinned,
      omitted: missing.length - pinned.length,
      tail,
      exchangeOffset: Math.max(0, layout.exchangeStart - layout.tailStart),
    };
  }

  private finishDraft(base: Base, draft: Draft, layout: Layout, outcome: CompactionOutcome, reason: string, call: SummarizerCall): CompactionResult {
    const { model } = this.options;
    const messages = base.messages;
    const hard = this.limitTokens - base.overhead;
    const goal = Math.floor(AFTER_SHARE * this.thresholdTokens) +
      rangeTokens(messages, 0, layout.systemEnd, model) + rangeTokens(messages, layout.exchangeStart, messages.length, model);
    let fitted = fitDraft(draft, Math.min(hard, goal), model);
    let out = renderDraft(fitted);
    if (countMessageTokens(out, model) > base.tokensBefore) {
      fitted = fitDraft(fitted, base.tokensBefore, model);
      out = renderDraft(fitted);
      if (countMessageTokens(out, model) > base.tokensBefore) {
        return this.unchanged(base, 'noop', 'compaction would not make the history smaller');
      }
    }
    const summary = fitted.body === null && fitted.pinned.length === 0 ? null : summaryText(fitted);
    const state = { ...base.state, pinsOmitted: fitted.omitted };
    return this.finish({ ...base, state }, out, outcome, summary, fitted.pinned, reason, call);
  }

  private finish(base: Base, out: ChatMessage[], outcome: CompactionOutcome, summary: string | null, pinnedFacts: string[], reason: string, call: SummarizerCall): CompactionResult {
    const tokensAfter = countMessageTokens(out, this.options.model);
    const effective = tokensAfter + base.overhead < this.thresholdTokens;
    const recorded = recordCompaction(base.state, outcome, effective);
    return {
      messages: out, outcome, summary, tokensBefore: base.tokensBefore, tokensAfter,
      pinnedFacts, state: recorded.state, pausedNow: recorded.pausedNow, reason, summarizerMs: call.ms,
      ...(call.usage ? { summarizerUsage: call.usage } : {}),
    };
  }

  private unchanged(base: Base, outcome: 'noop' | 'aborted', reason: string): CompactionResult {
    return {
      messages: base.messages.slice(), outcome, summary: currentSummary(base.messages),
      tokensBefore: base.tokensBefore, tokensAfter: base.tokensBefore, pinnedFacts: [],
      state: { ...base.state, lastOutcome: outcome }, pausedNow: false, reason, summarizerMs: 0,
    };
  }

  private failedSummarizer(state: CompactionState, aborting: boolean): CompactionState {
    const failures = state.summarizerFailures + 1;
    const backoff = this.options.summarizerCooldownMs * Math.min(2 ** (failures - 1), 8);
    return { ...state, summarizerFailures: failures, cooldownUntilMs: this.options.now() + backoff, cooldownAborts: aborting };
  }

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
    return { protectFirstN, protectLastN, tailBudget: Math.floor(Math.min(targetRatio * t, tailCeiling / 1.5)), tailCeiling, maxHeadTokens: Math.floor(0.1 * t), model };
  }
}

/** A pinned line's tokens, counted once per fact text (the same facts are pinned again and again). */
function pinnedLineTokens(fact: string, model?: string): number {
  const key = `${model ?? ''}\u0000${fact}`;
  let tokens = pinnedLineCache.get(key);
  if (tokens === undefined) {
    tokens = countTextTokens(`- ${fact}\n`, model);
    if (pinnedLineCache.size >= 50_000) pinnedLineCache.clear();
    pinnedLineCache.set(key, tokens);
  }
  return tokens;
}

const pinnedLineCache = new Map<string, number>();

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
}

/** The messages between head and tail that the summariser gets: the old summary excluded, its merged remainder kept. */
function middleTurns(messages: readonly ChatMessage[], layout: Layout): ChatMessage[] {
  const turns: ChatMessage[] = [];
  for (let i = layout.headEnd; i < layout.tailStart; i++) {
    const message = messages[i];
    if (i !== layout.summaryIndex) {
      turns.push(message);
      continue;
    }
    const parsed = parseSummary(message);
    if (parsed && (parsed.rest.trim() !== '' || (message.role === 'assistant' && message.tool_calls?.length))) {
      turns.push({ ...message, content: parsed.rest } as ChatMessage);
    }
  }
  return turns;
}

function losesFacts(before: readonly ChatMessage[], after: readonly ChatMessage[], from: number, to: number): boolean {
  const present = presentFacts(after);
  for (let i = from; i < to; i++) {
    if (before[i] === after[i]) continue;
    for (const fact of factsOfMessage(before[i])) if (!present.has(fact)) return true;
  }
  return false;
}

function currentSummary(messages: readonly ChatMessage[]): string | null {
  for (const message of messages) {
    if (parseSummary(message)) {
      const text = messageText(message);
      const end = text.indexOf('[chatgate:end of summary]');
      return end === -1 ? text : text.slice(0, end + '[chatgate:end of summary]'.length);
    }
  }
  return null;
}

async function callSummarizer(summarizer: Summarizer, request: Parameters<Summarizer['summarize']>[0]): Promise<SummaryOutput | { error: unknown } | null> {
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
