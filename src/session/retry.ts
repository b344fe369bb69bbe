/**
 * `/retry`: the last exchange (the last user message, or the run of them one turn took, and what
 * answered it) leaves the projection, and its user messages are asked again as new messages through
 * the normal inbox path. Runs under the session's lease while no turn runs or waits; the transcript
 * keeps the old exchange.
 */
import { lastExchange } from '../core/last-exchange.js';
import { findSummary } from '../core/summary-block.js';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import { holdLease } from '../redis/lease.js';
import type { SessionStore } from '../redis/session-store.js';
import { TurnState } from './turn-state.js';

/** What `/retry` did. */
export type RetryOutcome =
  /** A turn runs or messages wait for one: nothing was changed. */
  | { state: 'busy' }
  /** No user message in the context (a new or reset conversation). */
  | { state: 'nothing' }
  /** The last exchange was folded into the summary by a compaction: it cannot be taken out. */
  | { state: 'summarised' }
  /** Taken out; `texts` were handed to `resubmit` (in order). */
  | { state: 'retried'; texts: string[] };

/** Takes out the last exchange of a session and asks its user messages again. */
export interface RetryPort {
  /**
   * `resubmit` receives the user texts to ask again and must make them durable (the inbox) before it
   * resolves; it runs under the lease, before the projection is rewritten, so a crash in between
   * asks again with the old exchange still there rather than losing the question.
   */
  retry(sessionId: string, resubmit: (texts: string[]) => Promise<void>): Promise<RetryOutcome>;
}

/** Creates the `/retry` operation. */
export function createRetry(deps: { redis: RedisClient; store: SessionStore; logger: Logger }, options: { leaseTtlMs: number }): RetryPort {
  const log = deps.logger.child({ component: 'retry' });
  return {
    async retry(sessionId, resubmit) {
      const keys = deps.store.keys(sessionId);
      const lease = await holdLease(deps.redis, keys, options.leaseTtlMs);
      if (lease === null) return { state: 'busy' };
      try {
        const [waiting, taken] = await Promise.all([deps.redis.llen(keys.inbox), deps.redis.llen(keys.processing)]);
        if (waiting > 0 || taken > 0) return { state: 'busy' };
        const turn = new TurnState(deps.store, sessionId, await deps.store.load(sessionId), lease.fence);
        const messages = turn.messages();
        const exchange = lastExchange(messages, findSummary(messages, turn.compaction.summary ?? undefined)?.index ?? -1);
        if (!exchange) return { state: 'nothing' };
        if (exchange.holdsSummary) return { state: 'summarised' };
        await resubmit(exchange.userTexts);
        await turn.replace(turn.entries.slice(0, exchange.start), turn.compaction, { meta: { turnInboundIds: [] } });
        log.info({ sessionId, removedMessages: messages.length - exchange.start, asked: exchange.userTexts.length }, 'last exchange retried');
        return { state: 'retried', texts: exchange.userTexts };
      } finally {
        await lease.release();
      }
    },
  };
}
