/**
 * The budget wrapper every model call goes through — the agent's, the summariser's (in a turn, in
 * the gateway's hygiene, `/compact`, `chatgate compact`) and a transcription's: it reserves the
 * call's worst case on every level that applies, settles it with the provider's usage after, and
 * enforces the per-turn caps. Whom a call counts for comes with the call (`scope`, a `CallScope`);
 * a call made with none counts for the deployment alone.
 */
import { budgetMessage, budgetNoticeMessage, hasBudgets, type CallScope, type TurnSpend, MIN_AUDIO_BYTES_PER_SECOND, transcriptionMicroUsd, TYPICAL_AUDIO_BYTES_PER_SECOND, worstCaseMicroUsd, type BudgetBreach, type BudgetSettings } from '../core/budget.js';
import { estimateCostUsd, pricingOf, type ModelPricing, type PriceTable } from '../core/models.js';
import type { TokenCounter } from '../core/tokens.js';
import { BudgetError } from '../errors.js';
import type { LlmClient } from '../llm/client.js';
import { countMessageTokens } from '../llm/encodings.js';
import type { Transcriber } from '../llm/transcribe.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { RedisClient } from '../redis/client.js';
import { createBudgetAlerts, type BudgetAlerts, type BudgetAlertsOptions } from './alerts.js';
import { createBudgetLedger, type BudgetEvent, type BudgetLedger, type CallNeed } from './ledger.js';

/** A refusal in a turn already told, after an earlier reply, that this limit is used up. */
const ALREADY_TOLD = 'This request stopped here: that budget is used up.';

/** Options of {@link guardLlm} and {@link guardTranscriber}. */
export interface BudgetGuardOptions {
  settings: BudgetSettings;
  prices?: PriceTable;
  /** Output tokens assumed for a call that sets no `maxTokens`. */
  defaultMaxTokens: number;
  /** Counts the prompt of a call (the process's shared counter). Default: a new one. */
  tokenCounter?: TokenCounter;
  now?: () => number;
}

/** What the wrappers need: the counters, a logger and where events go (default: logged and counted nowhere else). */
export interface BudgetGuardDeps {
  ledger: BudgetLedger;
  logger: Logger;
  alerts?: BudgetAlerts;
}

/** The budget wrappers of one process, or undefined when no limit is set (calls go straight through). */
export interface BudgetGuard {
  llm(client: LlmClient): LlmClient;
  transcriber(transcriber: Transcriber): Transcriber;
  readonly alerts: BudgetAlerts;
}

/**
 * The one place a process gets its budget wrappers: undefined when `options.settings` sets no limit.
 * Events are POSTed to `settings.alertWebhookUrl` when set.
 */
export function createBudgetGuard(
  deps: { redis: RedisClient; logger: Logger; metrics?: Metrics },
  options: BudgetGuardOptions & { keyPrefix: string; alerts?: Omit<BudgetAlertsOptions, 'webhookUrl'> },
): BudgetGuard | undefined {
  if (!hasBudgets(options.settings)) return undefined;
  const alerts = createBudgetAlerts({ logger: deps.logger, metrics: deps.metrics }, { ...options.alerts, webhookUrl: options.settings.alertWebhookUrl });
  const guardDeps = { ledger: createBudgetLedger(deps.redis, { keyPrefix: options.keyPrefix, settings: options.settings, now: options.now }), logger: deps.logger, alerts };
  return { alerts, llm: (client) => guardLlm(client, guardDeps, options), transcriber: (t) => guardTranscriber(t, guardDeps, options) };
}

/**
 * `llm` with every call reserved and settled on `deps.ledger`.
 * @throws BudgetError (from `complete`) when a limit holds: the call is not made.
 */
export function guardLlm(llm: LlmClient, deps: BudgetGuardDeps, options: BudgetGuardOptions): LlmClient {
  const spend = createSpend(deps, options);
  // A model's price, looked up once (the price table does not change in a process).
  const prices = new Map<string, ModelPricing | undefined>();
  const priceOf = (model: string): ModelPricing | undefined => {
    if (prices.has(model)) return prices.get(model);
    const pricing = pricingOf(model, options.prices);
    if (prices.size < 1000) prices.set(model, pricing);
    return pricing;
  };
  return {
    model: llm.model,
    timeoutMs: llm.timeoutMs,
    async complete(request) {
      const model = request.model ?? llm.model;
      const pricing = priceOf(model);
      // A turn knows its request's size (never re-tokenize a whole history on the hot path); others are counted.
      const promptTokens = request.promptTokens ?? countMessageTokens(request.messages, model, options.tokenCounter);
      const maxTokens = request.maxTokens || options.defaultMaxTokens;
      const need = { micro: worstCaseMicroUsd(pricing, promptTokens, maxTokens), tokens: promptTokens + maxTokens };
      return spend(`model call with ${model}`, model, request.scope, need, async () => {
        const result = await llm.complete(request);
        const usage = result.usage ?? { promptTokens, completionTokens: 0, cachedTokens: 0 };
        return { result, used: { micro: pricing ? Math.round(estimateCostUsd(pricing, usage) * 1_000_000) : undefined, tokens: usage.promptTokens + usage.completionTokens } };
      });
    },
  };
}

/**
 * `transcriber` with every transcription reserved and settled: the worst case bounds the audio's
 * length by its size ({@link MIN_AUDIO_BYTES_PER_SECOND}); the settle takes the duration the
 * provider reports, else a typical bitrate. Tokens count only when the provider reports them.
 */
export function guardTranscriber(transcriber: Transcriber, deps: BudgetGuardDeps, options: BudgetGuardOptions): Transcriber {
  const spend = createSpend(deps, options);
  const model = transcriber.model;
  return {
    model,
    transcribe(file, options = {}) {
      const need = { micro: transcriptionMicroUsd(model, file.bytes.length / MIN_AUDIO_BYTES_PER_SECOND), tokens: 0 };
      return spend(`transcription of ${file.fileName}`, model, options.scope, need, async () => {
        const result = await transcriber.transcribe(file, options);
        const seconds = result.usage?.seconds ?? file.bytes.length / TYPICAL_AUDIO_BYTES_PER_SECOND;
        return { result, used: { micro: transcriptionMicroUsd(model, seconds), tokens: (result.usage?.inputTokens ?? 0) + (result.usage?.outputTokens ?? 0) } };
      });
    },
  };
}

type Spend = <T>(what: string, model: string, scope: CallScope | undefined, need: CallNeed, call: () => Promise<{ result: T; used: CallNeed }>) => Promise<T>;

/** Reserve → call → settle for the call's scope; a failed call settles with nothing (its reservation is released). */
function createSpend(deps: BudgetGuardDeps, options: BudgetGuardOptions): Spend {
  const log = deps.logger.child({ component: 'budget' });
  const now = options.now ?? Date.now;
  const alerts = deps.alerts ?? createBudgetAlerts({ logger: deps.logger });
  // What each turn was told of a limit used up, so a later refusal in that turn does not say it twice.
  const told = new WeakMap<TurnSpend, string>();
  const refuse = (breach: BudgetBreach, what: string, turn?: TurnSpend): never => {
    const text = budgetMessage(breach, now(), options.settings.timeZone);
    // Told already: the same limit's message, whatever this call needed.
    const same = turn && told.get(turn) === budgetMessage({ ...breach, needed: undefined }, now(), options.settings.timeZone);
    throw new BudgetError(what, same ? ALREADY_TOLD : text);
  };
  const emit = (events: BudgetEvent[], scope: CallScope, model: string): void => {
    for (const event of events) alerts.emit({ ...event, model, channel: channelOf(scope), atMs: now() });
  };
  // A settle's events: the operator hears each; the turn's user reads one line after the reply (used up wins over the notice).
  const tell = (events: BudgetEvent[], scope: CallScope, model: string): void => {
    emit(events, scope, model);
    const event = events.find((e) => e.kind === 'exhausted') ?? events[0];
    if (!event || !scope.turn) return;
    const { timeZone } = options.settings;
    const text = event.kind === 'exhausted' ? budgetMessage(event, now(), timeZone) : budgetNoticeMessage(event, now(), timeZone);
    if (event.kind === 'exhausted') told.set(scope.turn, text);
    scope.turn.onNotice(text);
  };
  return async (what, model, scope = {}, need, call) => {
    // A turn's next call reserves once its previous one has settled (its reservation released).
    if (scope.turn?.settling) await scope.turn.settling;
    const ledgerScope = { user: scope.user, chat: scope.chat };
    if (scope.turn) checkTurnCaps(scope.turn, options.settings, need, (breach) => refuse(breach, what));
    const reserved = await deps.ledger.reserve(ledgerScope, need);
    if ('breach' in reserved) {
      // The refusal is what the user reads (BudgetError); the operator hears the first one.
      if (reserved.event) emit([reserved.event], scope, model);
      const { level, period, unit, limit, used } = reserved.breach;
      const why = reserved.breach.inFlight ? 'calls in flight hold the room left' : used !== undefined && used < limit ? 'no room left for its worst case' : 'budget used up';
      log.info({ budgetLevel: level, period, unit, limit, used, model }, `${what} refused: ${why}`);
      // Short of the limit: the user reads how much one call may take (its worst case), which is why it does not fit.
      const needed = reserved.breach.unit === 'usd' ? (need.micro === undefined ? undefined : need.micro / 1_000_000) : need.tokens;
      return refuse({ ...reserved.breach, ...(needed === undefined ? {} : { needed }) }, what, scope.turn);
    }
    let used: CallNeed = { micro: 0, tokens: 0 };
    try {
      const outcome = await call();
      used = outcome.used;
      return outcome.result;
    } finally {
      if (scope.turn) {
        scope.turn.usedMicro += used.micro ?? 0;
        scope.turn.usedTokens += used.tokens;
      }
      const settling = deps.ledger.settle(ledgerScope, reserved.id, used).then((events) => tell(events, scope, model), (err: unknown) => log.warn({ err }, 'budget not settled: its reservation is released when its lease ends'));
      // A turn has its answer at once (its live reply ends without waiting on Redis); its next call
      // and its commit (workers/turn-commit.ts `finish`) wait for `settling`, so its notices go with the reply.
      if (scope.turn) scope.turn.settling = settling;
      else await settling;
    }
  };
}

/** The per-turn caps: a call goes only if what the turn used plus the call's worst case fits. */
function checkTurnCaps(turn: TurnSpend, settings: BudgetSettings, need: CallNeed, refuse: (breach: BudgetBreach) => never): void {
  const cap = settings.turn;
  // A cap reached holds even for a call that needs none of it (a transcription's tokens).
  const over = (used: number, needed: number, limit: number) => used + needed > limit || used >= limit;
  if (cap.usd !== undefined && need.micro !== undefined && over(turn.usedMicro, need.micro, Math.round(cap.usd * 1_000_000))) {
    refuse({ level: 'turn', unit: 'usd', limit: cap.usd, used: turn.usedMicro / 1_000_000 });
  }
  if (cap.tokens !== undefined && over(turn.usedTokens, need.tokens, cap.tokens)) refuse({ level: 'turn', unit: 'tokens', limit: cap.tokens, used: turn.usedTokens });
}

/** The channel of a call's user (or chat): the part before the first `:`; bounded, a metric label. */
function channelOf(scope: CallScope): string {
  const subject = scope.user ?? scope.chat;
  return subject?.includes(':') ? subject.slice(0, subject.indexOf(':')) : 'none';
}
