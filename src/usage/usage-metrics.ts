import type { Metrics } from '../metrics.js';
import type { CommitChange } from '../redis/session-store.js';

/**
 * The session store's `onCommitted` hook that counts each committed change's usage in `metrics`,
 * by channel (the session id's prefix) and model, as the rollups hold it: every model call once.
 */
export function recordCommittedUsage(metrics: Metrics | undefined): ((sessionId: string, change: Pick<CommitChange, 'usage'>) => void) | undefined {
  if (!metrics) return undefined;
  return (sessionId, change) => {
    const channel = sessionId.slice(0, Math.max(0, sessionId.indexOf(':'))) || 'unknown';
    for (const [model, f] of Object.entries(change.usage?.rollup ?? {})) {
      metrics.record({
        type: 'usage', channel, model, inputTokens: f.in ?? 0, cachedTokens: f.cached ?? 0, outputTokens: f.out ?? 0,
        calls: f.calls ?? 0, costUsd: (f.cost ?? 0) / 1_000_000, unpricedCalls: f.unpriced ?? 0,
      });
    }
  };
}
