/**
 * What an operator hears of a limit: each "near" (the notice share) and "exhausted" event — said
 * once per level, subject and period across every worker, the settle script sees to that — is
 * logged at warn, counted in the metrics (channel and model only) and, when a webhook is set,
 * POSTed to it as JSON in the background: retried with backoff, never awaited by a turn.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.js';
import { NOOP_METRICS, type Metrics } from '../metrics.js';
import type { BudgetEvent } from './ledger.js';

/** The version of the webhook's JSON body. */
export const BUDGET_ALERT_VERSION = 1;

/** Default attempts of one webhook POST (the first and 4 more, after 1, 2, 4 and 8 s). */
export const DEFAULT_ALERT_ATTEMPTS = 5;

/** Default wait of {@link BudgetAlerts.close} for the POSTs still under way, ms. */
export const DEFAULT_ALERT_CLOSE_WAIT_MS = 2000;

/** One event as the operator receives it. */
export interface BudgetAlert extends BudgetEvent {
  /** The model of the call that brought it. */
  model: string;
  /** The channel of the user or chat (`telegram`, …), `none` for a call with neither. */
  channel: string;
  atMs: number;
}

/** Options of {@link createBudgetAlerts}. */
export interface BudgetAlertsOptions {
  /** `CHATGATE_ALERT_WEBHOOK_URL`; absent: no POST. */
  webhookUrl?: string;
  /** Attempts of one POST (network errors, 408, 429 and 5xx are tried again). Default {@link DEFAULT_ALERT_ATTEMPTS}. */
  attempts?: number;
  /** Wait before the second attempt, ms; doubled each time. Default 1000. */
  retryBaseMs?: number;
  /** Timeout of one attempt, ms. Default 5000. */
  timeoutMs?: number;
}

/** Where budget events go. */
export interface BudgetAlerts {
  /** Logs, counts and (in the background) posts `alert`. Never throws, never waits. */
  emit(alert: BudgetAlert): void;
  /** Resolves when every POST started so far has ended (delivered or given up). */
  idle(): Promise<void>;
  /**
   * At shutdown: waits up to `waitMs` (default {@link DEFAULT_ALERT_CLOSE_WAIT_MS}) for the POSTs
   * still under way, then logs at warn how many were not delivered and their subjects. Never throws.
   */
  close(waitMs?: number): Promise<void>;
}

/** Creates the alerts of one process. */
export function createBudgetAlerts(deps: { logger: Logger; metrics?: Metrics }, options: BudgetAlertsOptions = {}): BudgetAlerts {
  const log = deps.logger.child({ component: 'budget' });
  const metrics = deps.metrics ?? NOOP_METRICS;
  const pending = new Map<Promise<void>, BudgetAlert>();
  // Aborted by close(): the retries still waiting stop (close names them).
  const stop = new AbortController();
  const idle = async () => {
    while (pending.size > 0) await Promise.all([...pending.keys()]);
  };
  return {
    emit(alert) {
      const { subject, level, period, unit, limit, used, kind, model, channel } = alert;
      // `budgetLevel`: pino's own `level` field must stay the log level.
      log.warn({ budgetLevel: level, subject, period, unit, limit, used, model }, alertWords(alert));
      metrics.record({ type: 'budget_event', kind, channel, model });
      if (!options.webhookUrl) return;
      const sent = post(options.webhookUrl, alert, options, log, stop.signal)
        .catch((err: unknown) => log.warn({ err, kind, budgetLevel: level, subject }, 'budget alert not delivered to the webhook'))
        .finally(() => pending.delete(sent));
      pending.set(sent, alert);
    },
    idle,
    async close(waitMs = DEFAULT_ALERT_CLOSE_WAIT_MS) {
      if (pending.size === 0) return;
      const timer = new AbortController();
      await Promise.race([idle(), sleep(waitMs, undefined, { signal: timer.signal }).catch(() => undefined)]);
      timer.abort();
      if (pending.size === 0) return;
      const left = [...pending.values()];
      stop.abort();
      log.warn({ undelivered: left.length, subjects: left.map((a) => `${a.level}:${a.subject}`), kinds: left.map((a) => a.kind) }, 'budget alerts not delivered to the webhook: shutting down while they were retried');
    },
  };
}

/**
 * What an event says: `budget near its limit`, `budget used up`, or `budget too low for another
 * call` for a limit not used up that has no room for one call's worst case (it holds all the same).
 */
export function alertWords(alert: Pick<BudgetAlert, 'kind' | 'used' | 'limit'>): string {
  if (alert.kind === 'near') return 'budget near its limit';
  return alert.used < alert.limit ? 'budget too low for another call' : 'budget used up';
}

/** The webhook's JSON body: `used` below `limit` in a `budget.exhausted` is a limit too low for another call. */
export function alertBody(alert: BudgetAlert): Record<string, unknown> {
  return {
    version: BUDGET_ALERT_VERSION, type: `budget.${alert.kind}`, level: alert.level, subject: alert.subject, period: alert.period ?? null,
    unit: alert.unit, limit: alert.limit, used: alert.used, resetsAt: alert.resetsAtMs === undefined ? null : new Date(alert.resetsAtMs).toISOString(),
    model: alert.model, channel: alert.channel, at: new Date(alert.atMs).toISOString(),
  };
}

async function post(url: string, alert: BudgetAlert, options: BudgetAlertsOptions, log: Logger, stop: AbortSignal): Promise<void> {
  const attempts = options.attempts ?? DEFAULT_ALERT_ATTEMPTS;
  const body = JSON.stringify(alertBody(alert));
  let last = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.any([stop, AbortSignal.timeout(options.timeoutMs ?? 5000)]) });
      await response.body?.cancel();
      if (response.ok) return;
      last = `HTTP ${response.status}`;
      if (!retried(response.status)) break;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (stop.aborted) return;
    if (attempt < attempts) await sleep((options.retryBaseMs ?? 1000) * 2 ** (attempt - 1), undefined, { signal: stop }).catch(() => undefined);
    if (stop.aborted) return;
  }
  // Said once per alert, not per attempt; the URL may carry a secret, so only its origin is named.
  log.warn({ kind: alert.kind, budgetLevel: alert.level, subject: alert.subject, webhook: new URL(url).origin, reason: last }, 'budget alert not delivered to the webhook');
}

function retried(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}
