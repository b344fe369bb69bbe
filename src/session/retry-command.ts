/**
 * `/retry`: the last exchange (the last user message, or the run of them one turn took, and what
 * answered it) leaves the projection, and its user messages are asked again as new messages through
 * the normal inbox path. Runs under the session's lease while no turn runs or waits; the transcript
 * keeps the old exchange.
 */
import type { AttachmentRef } from '../core/attachments.js';
import type { StoredAttachment } from '../core/inbound.js';
import { lastExchange, lastExchangeImages } from '../core/last-exchange.js';
import { findSummary } from '../core/compaction/summary-block.js';
import type { Logger } from '../log.js';
import { storedAttachments } from '../redis/attachments.js';
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

/** An image of a message asked again: its reference in the projection, and where its bytes are (null: expired). */
export interface RetriedImage {
  ref: AttachmentRef;
  stored: StoredAttachment | null;
}

/** Takes out the last exchange of a session and asks its user messages again. */
export interface RetryPort {
  /**
   * `resubmit` receives the user texts to ask again and the images of each (in the same order; the
   * Redis implementation always passes them), and must make them durable (the inbox) before it
   * resolves; it runs under the lease, before the projection is rewritten, so a crash in between
   * asks again with the old exchange still there rather than losing the question.
   */
  retry(sessionId: string, resubmit: (texts: string[], images?: RetriedImage[][]) => Promise<void>): Promise<RetryOutcome>;
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
        await resubmit(exchange.userTexts, await imagesOf(deps.redis, sessionId, lastExchangeImages(messages, exchange), deps.store.keyPrefix));
        await turn.replace(turn.entries.slice(0, exchange.start), turn.compaction, { meta: { turnInboundIds: [] } });
        log.info({ sessionId, removedMessages: messages.length - exchange.start, asked: exchange.userTexts.length }, 'last exchange retried');
        return { state: 'retried', texts: exchange.userTexts };
      } finally {
        await lease.release();
      }
    },
  };
}

/** Each message's images with where their bytes are now (one round trip for all). */
async function imagesOf(redis: RedisClient, sessionId: string, refs: AttachmentRef[][], keyPrefix: string): Promise<RetriedImage[][]> {
  const stored = await storedAttachments(redis, sessionId, refs.flat().map((ref) => ref.id), { keyPrefix });
  let k = 0;
  return refs.map((list) => list.map((ref) => ({ ref, stored: stored[k++] ?? null })));
}
