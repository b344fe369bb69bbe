import { startPeriodic, type Periodic } from '../periodic.js';
import { decideAndWake, type ApprovalDeps } from './decide.js';

/** Default of how often the gateway looks for questions nobody answered in time, ms. */
export const DEFAULT_APPROVAL_SWEEP_INTERVAL_MS = 5000;
/** Approvals expired per look at most (the rest wait for the next). */
const BATCH = 100;

/**
 * Expires the approvals nobody decided in time, every `intervalMs` (and at start): each is decided
 * `expired` by the same script as every decision and its turn woken through the inbox, so the model
 * is told and the turn goes on. Several gateways may run it: the script decides once.
 */
export function startApprovalExpiry(deps: ApprovalDeps, options: { intervalMs?: number; now?: () => number } = {}): Periodic<number> {
  const log = deps.logger.child({ component: 'approval-expiry' });
  const now = options.now ?? Date.now;
  const sweepOnce = async (): Promise<number> => {
    let expired = 0;
    for (const entry of await deps.store.due(now(), BATCH)) {
      const result = await decideAndWake(deps, entry.sessionId, entry.id, { decision: 'expired', via: 'timeout' });
      if (result.outcome === 'not-due') continue;
      if (result.outcome === 'applied') expired++;
      await deps.store.forgetDue(entry);
    }
    return expired;
  };
  return startPeriodic(sweepOnce, {
    intervalMs: options.intervalMs ?? DEFAULT_APPROVAL_SWEEP_INTERVAL_MS,
    atStart: true,
    onError: (err) => log.warn({ err }, 'approval expiry failed; the next look retries'),
  });
}
