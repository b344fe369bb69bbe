import type { OutboundMessage } from '../core/inbound.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../core/retry.js';
import { createOutageLog, type Logger } from '../log.js';
import { NOOP_METRICS, type Metrics } from '../metrics.js';
import { duplicateRedis, type RedisClient } from '../redis/client.js';
import { newProcessId } from '../redis/heartbeats.js';
import { openOutboundShard, type OutboundEntry, type OutboundShard } from './outbound-shard.js';
import type { Delivery } from './delivery.js';
import { handleEntry, type EntryContext, type OutboundOutcome } from './handle-entry.js';
import { createOutboundOrder } from './outbound-order.js';

export type { OutboundOutcome };

/** Options of {@link createOutboundConsumer}. */
export interface OutboundConsumerOptions {
  /** The shard's prefix (one of `shardPrefixes(names)`) and the outbound queue's name. */
  queuePrefix: string;
  outboundQueue: string;
  /** Replies delivered in parallel (different chats). Default 8. */
  concurrency?: number;
  /**
   * How long a reply waits (moved to delayed, no attempt spent) before looking again when an older
   * reply of its session is still pending a retry, ms. Default 1000.
   */
  orderRetryMs?: number;
  /** How long a reply pending a retry may hold its session's later replies back, ms. Default 600 000. */
  maxOrderHoldMs?: number;
  /**
   * How long after it was enqueued a reply may still wait out rate limits without spending an
   * attempt, ms; later rate limits count as failed attempts (with their retry-after as backoff).
   * Default 3 600 000.
   */
  maxRateLimitedMs?: number;
  /**
   * The claim on a reply taken from the stream, renewed every half of it while the gateway holds
   * the reply, ms. A gateway that dies mid-delivery leaves its replies pending; once idle this long
   * another gateway's stall check claims them (in their place: see src/outbound/outbound-order.ts). Default 5000.
   */
  lockDurationMs?: number;
  /** How often the consumer claims replies whose gateway died and moves due delayed replies back, ms. Default 2000. */
  stalledIntervalMs?: number;
  /** How many times a reply may be interrupted by a dying gateway and still be retried; then it fails for good. Default 20. */
  maxStalledCount?: number;
  /** Backoff of transient failures between attempts. Default {@link DEFAULT_RETRY_POLICY}. */
  retry?: Partial<Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs' | 'jitterRatio'>>;
  /** The longest a blocked read waits before looking again, ms (also bounds how late `close` ends it). Default 1000. */
  blockMs?: number;
  /**
   * How long `close` waits for the deliveries running, ms. A delivery still running then is left
   * behind: its reply stays claimed by this consumer, unrenewed, and a live gateway claims it after
   * `lockDurationMs`. Default {@link DEFAULT_CLOSE_TIMEOUT_MS}.
   */
  closeTimeoutMs?: number;
}

/** Default of {@link OutboundConsumerOptions.closeTimeoutMs}, ms. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;

/** A running consumer of one outbound shard. */
export interface OutboundConsumer {
  /**
   * Stops reading (a blocked read ends at once), waits for the deliveries running — at most
   * `closeTimeoutMs` — and leaves the group (unless a delivery was left behind). Never rejects.
   */
  close(): Promise<void>;
}

/** Dependencies of {@link createOutboundConsumer}. */
export interface OutboundConsumerDeps {
  /** The connection of every command but the blocked read (which gets a duplicate of its own). */
  redis: RedisClient;
  delivery: Delivery;
  logger: Logger;
  metrics?: Metrics;
  onDelivered?: (message: OutboundMessage) => void;
  /** Told what became of each reply taken (delivered, delayed, failed for good). */
  onOutcome?: (outcome: OutboundOutcome) => void;
  random?: () => number;
}

/**
 * Runs tasks one at a time per key, in the order they were submitted; different keys run in
 * parallel. Keeps one chat's replies (and their chunks) in order while other chats proceed.
 */
export function createKeyedQueue(): { run<T>(key: string, task: () => Promise<T>): Promise<T> } {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run(key, task) {
      const previous = tails.get(key) ?? Promise.resolve();
      const result = previous.then(task, task);
      const tail = result.catch(() => undefined);
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
  };
}

/**
 * Consumes one outbound shard (a Redis stream read in the gateways' consumer group): each entry
 * is one reply, delivered through its channel. This is the one retry layer of deliveries (the
 * channels and the delivery do not retry): a permanent failure (chat not found, bot blocked) fails
 * the reply for good; a rate limit moves it to the delayed set until the platform's retry-after,
 * without spending an attempt or holding a delivery slot; a transient failure spends one of its 8
 * attempts and is retried after the backoff of the retry policy (src/core/retry.ts). The delivery
 * ledger makes sure no chunk is sent twice.
 * Replies of one session are delivered one after another, in the order the consumer took them; a
 * reply taken while an earlier one of its session is not delivered yet (waiting for a retry, or
 * interrupted by a gateway that died) is held back (delayed for `orderRetryMs`, attempts
 * untouched) until the earlier one is delivered or failed for good — at most `maxOrderHoldMs`
 * after it started waiting. A crash mid-send may send the chunk in flight twice on Telegram and
 * Discord (at most once per crash); the web chat's append is idempotent (docs/operating.md).
 */
export function createOutboundConsumer(deps: OutboundConsumerDeps, options: OutboundConsumerOptions): OutboundConsumer {
  // Entries held and not being settled yet: the ones whose claim the renewal keeps.
  const claims = new Set<string>();
  const shard = settlingLeavesClaims(openOutboundShard(deps.redis, options.queuePrefix, options.outboundQueue), claims);
  const log = deps.logger.child({ component: 'outbound' });
  const ctx: EntryContext = {
    shard, delivery: deps.delivery, log, metrics: deps.metrics ?? NOOP_METRICS, onDelivered: deps.onDelivered, onOutcome: deps.onOutcome,
    order: createOutboundOrder({ redis: deps.redis }, { ...options, maxHoldMs: options.maxOrderHoldMs }),
    orderRetryMs: options.orderRetryMs ?? 1000, maxRateLimitedMs: options.maxRateLimitedMs ?? 3_600_000,
    maxStalledCount: options.maxStalledCount ?? 20, policy: { ...DEFAULT_RETRY_POLICY, ...options.retry }, random: deps.random ?? Math.random,
    perChat: createKeyedQueue(), wakePromoter: (dueMs) => timers.promoteAt(dueMs),
  };
  const concurrency = options.concurrency ?? 8;
  const consumer = newProcessId();
  const blocking = duplicateRedis(deps.redis);
  blocking.on('error', (err: Error) => log.debug({ err }, 'outbound read connection error'));
  const held = new Map<string, Promise<void>>();
  let closing = false;
  let slotFreed: (() => void) | undefined;
  // While Redis is away a read fails every second: one warning per 30 s, the rest at debug.
  const outage = createOutageLog(log);

  const take = (entry: OutboundEntry): void => {
    // Claimed back from ourselves after a missed renewal, or taken while closing (left for a live gateway's claim).
    if (held.has(entry.entryId) || closing) return;
    claims.add(entry.entryId);
    const run = handleEntry(ctx, entry)
      .catch((err: unknown) => outage.error({ err, entryId: entry.entryId }, 'outbound entry not settled; a live gateway claims it after the lock duration'))
      .finally(() => {
        held.delete(entry.entryId);
        claims.delete(entry.entryId);
        slotFreed?.();
      });
    held.set(entry.entryId, run);
  };
  const free = () => concurrency - held.size;
  const timers = startTimers({
    lockDurationMs: options.lockDurationMs ?? 5000, stalledIntervalMs: options.stalledIntervalMs ?? 2000,
    renew: async () => {
      if (claims.size === 0) return;
      const lost = await shard.renew(consumer, [...claims]);
      // This gateway stalled past the lock (a blocked event loop, a paused Redis): a live one took over.
      if (lost > 0) log.warn({ replies: lost }, 'replies being delivered here were taken over by another gateway after a stall; their delivery ledger keeps chunks from being sent twice');
    },
    claim: async (cursor) => {
      const claimed = free() > 0 ? await shard.claimStalled(consumer, options.lockDurationMs ?? 5000, cursor, free()) : { cursor, entries: [] };
      claimed.entries.forEach(take);
      return claimed.cursor;
    },
    promote: async () => (await shard.promote(Date.now(), 100)).nextDueMs,
    onError: (err) => outage.warn({ err }, 'outbound maintenance failed; it runs again at the next interval'),
  });
  const loop = (async () => {
    let grouped = false;
    while (!closing) {
      try {
        if (!grouped) await shard.ensureGroup();
        grouped = true;
        if (free() <= 0) {
          await new Promise<void>((resolve) => { slotFreed = resolve; });
          continue;
        }
        (await shard.read(blocking, consumer, free(), options.blockMs ?? 1000)).forEach(take);
        outage.available();
      } catch (err) {
        if (closing) break;
        if (String((err as Error).message).startsWith('NOGROUP')) grouped = false;
        outage.error({ err }, 'outbound read failed; retrying in a second');
        await new Promise((resolve) => setTimeout(resolve, 1000).unref());
      }
    }
  })();
  return {
    async close() {
      closing = true;
      timers.stopTaking();
      slotFreed?.();
      // Ends a blocked read now rather than after its block.
      blocking.disconnect();
      await loop;
      const timeoutMs = options.closeTimeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS;
      const finished = await settlesWithin(Promise.all(held.values()), timeoutMs);
      timers.stop();
      if (!finished) {
        log.warn({ replies: held.size, timeoutMs }, 'outbound consumer closed with deliveries still running; a live gateway claims their replies after the lock duration');
        return;
      }
      await shard.leave(consumer).catch((err: unknown) => log.debug({ err }, 'outbound consumer not removed from its group'));
    },
  };
}

/** Whether `work` (which never rejects) settles within `timeoutMs`. */
async function settlesWithin(work: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), timeoutMs); });
  try {
    return await Promise.race([work.then(() => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** `shard` whose settling operations (ack, delay, fail) first take the entry out of `claims`: a settled entry's claim is not renewed. */
function settlingLeavesClaims(shard: OutboundShard, claims: Set<string>): OutboundShard {
  return {
    ...shard,
    ack: (entryId, message) => (claims.delete(entryId), shard.ack(entryId, message)),
    delay: (entryId, replyId, dueMs, entry) => (claims.delete(entryId), shard.delay(entryId, replyId, dueMs, entry)),
    fail: (entryId, record, nowMs) => (claims.delete(entryId), shard.fail(entryId, record, nowMs)),
  };
}

interface TimerTasks {
  lockDurationMs: number;
  stalledIntervalMs: number;
  renew(): Promise<void>;
  /** Claims stalled entries from `cursor`; @returns the next cursor. */
  claim(cursor: string): Promise<string>;
  /** @returns when the next delayed entry is due, ms (-1: none). */
  promote(): Promise<number>;
  onError(err: unknown): void;
}

/**
 * The consumer's clocks: the claim renewal (every half lock), the stall check with the promotion of
 * due delayed entries (every stalled interval), and the promotion timer of the next due entry.
 */
function startTimers(tasks: TimerTasks) {
  let cursor = '0-0';
  let promoteTimer: NodeJS.Timeout | undefined;
  let promoteDueMs = Infinity;
  let taking = true;
  const guard = (task: () => Promise<unknown>) => () => void task().catch(tasks.onError);
  const promote = async () => {
    promoteTimer = undefined;
    promoteDueMs = Infinity;
    if (!taking) return;
    const next = await tasks.promote();
    if (next >= 0) promoteAt(next);
  };
  const promoteAt = (dueMs: number) => {
    if (!taking || dueMs >= promoteDueMs) return;
    clearTimeout(promoteTimer);
    promoteDueMs = dueMs;
    promoteTimer = setTimeout(guard(promote), Math.max(0, dueMs - Date.now()));
    promoteTimer.unref();
  };
  const renewTimer = setInterval(guard(tasks.renew), Math.max(50, Math.floor(tasks.lockDurationMs / 2)));
  const stallTimer = setInterval(guard(async () => {
    if (!taking) return;
    cursor = await tasks.claim(cursor);
    await promote();
  }), tasks.stalledIntervalMs);
  for (const timer of [renewTimer, stallTimer]) timer.unref();
  // At start: replies that came due while no gateway ran.
  setImmediate(guard(promote));
  return {
    promoteAt,
    /** Stops claiming and promoting (closing); the renewal keeps the replies still running claimed. */
    stopTaking() {
      taking = false;
      clearInterval(stallTimer);
      clearTimeout(promoteTimer);
    },
    stop() {
      clearInterval(renewTimer);
    },
  };
}
