/**
 * The budget wrapper every model call goes through — the agent's, the summariser's (in a turn, in
 * the gateway's hygiene, `/compact`, `chatgate compact`) and a transcription's: it reserves the
 * call's worst case on every level that applies, settles it with the provider's usage after, and
 * enforces the per-turn caps. Whom a call counts for comes with the call (`scope`, a `CallScope`);
 * a call made with none counts for the deployment alone.
 */
import { budgetMessage, budgetNoticeMessage, hasBudgets, type CallScope, type TurnSpend, MIN_AUDIO_BYTES_PER_SECOND, transcriptionMicroUsd, TYPICAL_AUDIO_BYTES_PER_SECOND, worstCaseMicroUsd, type BudgetBreach, type BudgetSettings } from '../core/budget.js';
import { estimateCostUsd, pricingOf, type PriceTable } from '../core/models.js';
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
  return {
    model: llm.model,
    timeoutMs: llm.timeoutMs,
    async complete(request) {
      const model = request.model ?? llm.model;
      const pricing = pricingOf(model, options.prices);
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
  const refuse = (breach: BudgetBreach, what: string): never => {
    throw new BudgetError(what, budgetMessage(breach, now(), options.settings.timeZone));
  };
  const tell = (events: BudgetEvent[], scope: CallScope, model: string): void => {
    for (const event of events) {
      alerts.emit({ ...event, model, channel: channelOf(scope), atMs: now() });
      if (event.kind === 'near') scope.turn?.onNotice(budgetNoticeMessage(event, options.settings.noticePercent));
    }
  };
  return async (what, model, scope = {}, need, call) => {
    const ledgerScope = { user: scope.user, chat: scope.chat };
    if (scope.turn) checkTurnCaps(scope.turn, options.settings, need.micro !== undefined, (breach) => refuse(breach, what));
    const reserved = await deps.ledger.reserve(ledgerScope, need);
    if ('breach' in reserved) {
      if (reserved.event) tell([reserved.event], scope, model);
      log.info({ budgetLevel: reserved.breach.level, period: reserved.breach.period, unit: reserved.breach.unit, model }, `${what} refused: budget used up`);
      return refuse(reserved.breach, what);
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
      await deps.ledger.settle(ledgerScope, reserved.id, used).then((events) => tell(events, scope, model), (err: unknown) => log.warn({ err }, 'budget not settled: its reservation is released when its lease ends'));
    }
  };
}

function checkTurnCaps(turn: TurnSpend, settings: BudgetSettings, priced: boolean, refuse: (breach: BudgetBreach) => never): void {
  const cap = settings.turn;
  if (cap.usd !== undefined && priced && turn.usedMicro >= cap.usd * 1_000_000) refuse({ level: 'turn', unit: 'usd', limit: cap.usd });
  if (cap.tokens !== undefined && turn.usedTokens >= cap.tokens) refuse({ level: 'turn', unit: 'tokens', limit: cap.tokens });
}

/** The channel of a call's user (or chat): the part before the first `:`; bounded, a metric label. */
function channelOf(scope: CallScope): string {
  const subject = scope.user ?? scope.chat;
  return subject?.includes(':') ? subject.slice(0, subject.indexOf(':')) : 'none';
}
