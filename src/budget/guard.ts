/**
 * The guard around model calls: before each call made inside a turn (the agent's, the compaction
 * summariser's) it reserves the call's worst case on every level, settles it with the provider's
 * usage after, and enforces the per-turn caps. The turn's scope travels in an AsyncLocalStorage,
 * so the summariser, which knows no session, counts for the turn that asked for it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { budgetMessage, budgetNoticeMessage, worstCaseMicroUsd, type BudgetBreach, type BudgetSettings } from '../core/budget.js';
import { estimateCostUsd, pricingOf, type PriceTable } from '../core/models.js';
import type { TokenCounter } from '../core/tokens.js';
import { countMessageTokens } from '../llm/encodings.js';
import { BudgetError } from '../errors.js';
import type { Logger } from '../log.js';
import type { LlmClient } from '../llm/client.js';
import type { BudgetEvent, BudgetLedger, BudgetScope } from './ledger.js';

/** What one turn has spent so far, and where its notices go. */
interface TurnBudget {
  scope: BudgetScope;
  usedMicro: number;
  usedTokens: number;
  onNotice: (text: string) => void;
}

const turns = new AsyncLocalStorage<TurnBudget>();

/** Options of {@link guardLlm}. */
export interface BudgetGuardOptions {
  settings: BudgetSettings;
  prices?: PriceTable;
  /** Output tokens assumed for a call that sets no `maxTokens`. */
  defaultMaxTokens: number;
  /** Counts the prompt of a call (the worker's shared counter). Default: a new one. */
  tokenCounter?: TokenCounter;
  now?: () => number;
}

/**
 * Runs `fn` (one turn) with model calls counted for `scope`; `onNotice` receives the user's notices
 * (a limit at the notice share). Calls made outside any turn are not counted.
 */
export function runWithBudget<T>(scope: BudgetScope, onNotice: (text: string) => void, fn: () => Promise<T>): Promise<T> {
  return turns.run({ scope, usedMicro: 0, usedTokens: 0, onNotice }, fn);
}

/**
 * `llm` with every call inside {@link runWithBudget} reserved and settled on `ledger`.
 * @throws BudgetError (from `complete`) when a limit holds: the call is not made.
 */
export function guardLlm(llm: LlmClient, deps: { ledger: BudgetLedger; logger: Logger }, options: BudgetGuardOptions): LlmClient {
  const log = deps.logger.child({ component: 'budget' });
  const now = options.now ?? Date.now;
  const refuse = (breach: BudgetBreach, what: string): never => {
    throw new BudgetError(what, budgetMessage(breach, now(), options.settings.timeZone));
  };
  return {
    model: llm.model,
    timeoutMs: llm.timeoutMs,
    async complete(request) {
      const turn = turns.getStore();
      if (!turn) return llm.complete(request);
      const model = request.model ?? llm.model;
      const pricing = pricingOf(model, options.prices);
      const promptTokens = countMessageTokens(request.messages, model, options.tokenCounter);
      const maxTokens = request.maxTokens || options.defaultMaxTokens;
      const micro = worstCaseMicroUsd(pricing, promptTokens, maxTokens);
      checkTurnCaps(turn, options.settings, pricing !== undefined, (breach) => refuse(breach, `model call with ${model}`));
      const reserved = await deps.ledger.reserve(turn.scope, { micro, tokens: promptTokens + maxTokens });
      if ('breach' in reserved) {
        log.warn({ level: reserved.breach.level, period: reserved.breach.period, unit: reserved.breach.unit, model }, 'model call refused: budget used up');
        return refuse(reserved.breach, `model call with ${model}`);
      }
      let used = { micro: 0, tokens: 0 };
      try {
        const result = await llm.complete(request);
        const usage = result.usage ?? { promptTokens, completionTokens: 0, cachedTokens: 0 };
        used = { micro: pricing ? Math.round(estimateCostUsd(pricing, usage) * 1_000_000) : 0, tokens: usage.promptTokens + usage.completionTokens };
        return result;
      } finally {
        turn.usedMicro += used.micro;
        turn.usedTokens += used.tokens;
        // A failed call settles with nothing: its reservation is released.
        await deps.ledger.settle(turn.scope, reserved.id, used).then((events) => tell(events, turn, options.settings, log), (err: unknown) => log.warn({ err }, 'budget not settled: its reservation is released when its lease ends'));
      }
    },
  };
}

function checkTurnCaps(turn: TurnBudget, settings: BudgetSettings, priced: boolean, refuse: (breach: BudgetBreach) => never): void {
  const cap = settings.turn;
  if (cap.usd !== undefined && priced && turn.usedMicro >= cap.usd * 1_000_000) refuse({ level: 'turn', unit: 'usd', limit: cap.usd });
  if (cap.tokens !== undefined && turn.usedTokens >= cap.tokens) refuse({ level: 'turn', unit: 'tokens', limit: cap.tokens });
}

function tell(events: BudgetEvent[], turn: TurnBudget, settings: BudgetSettings, log: Logger): void {
  for (const event of events) {
    log.warn({ level: event.level, period: event.period, unit: event.unit, limit: event.limit, kind: event.kind }, event.kind === 'near' ? 'budget near its limit' : 'budget used up');
    if (event.kind === 'near') turn.onNotice(budgetNoticeMessage(event, settings.noticePercent));
  }
}
