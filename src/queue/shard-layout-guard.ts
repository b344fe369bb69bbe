/**
 * A running process's hold on the queue layout: claimed at start (src/queue/shard-layout.ts), renewed on
 * a heartbeat-like tick, and noticed when another process recorded another shard count since (an
 * operator switched N while this process kept running, or it was cut off from Redis past its
 * period): then the process stops taking work, with one error line naming both counts.
 */
import type { Logger } from '../log.js';
import { GatewayError } from '../errors.js';
import type { RedisClient } from '../redis/client.js';
import { DEFAULT_HEARTBEAT_TTL_MS, newProcessId } from '../redis/heartbeats.js';
import { claimQueueLayout, layoutMovedMessage, releaseQueueLayout, renewQueueLayout } from './shard-layout.js';
import type { QueueNames } from './names.js';
import type { TurnProducer } from './producer.js';

/** Options of {@link holdQueueLayout}. */
export interface HoldQueueLayoutOptions {
  /** How long the process counts as a user of the layout unless renewed, ms (renewed every third). Default: the heartbeat's, `DEFAULT_HEARTBEAT_TTL_MS`. */
  ttlMs?: number;
  /** The process id among the users. Default a fresh `host:pid:random`. */
  member?: string;
  /** Called once when the layout moved away from the process's count (after the error line is logged). */
  onMoved?: (recorded: number) => void;
}

/** A claimed layout, renewed until released. */
export interface HeldQueueLayout {
  /** The shard count another process recorded since, or null while the process's own count holds. */
  readonly moved: number | null;
  /** @throws GatewayError `QUEUE_LAYOUT_MOVED` once the layout moved (readiness, producers). */
  check(): void;
  /** Renews now; {@link HeldQueueLayout.moved} tells the outcome. A Redis error is logged and left to the next tick. */
  renew(): Promise<void>;
  /** Stops renewing and leaves the layout's users (bounded: a stop while Redis is away does not hang). */
  release(): Promise<void>;
}

const RELEASE_BOUND_MS = 1000;

/**
 * Claims the layout of `names` for this process, then renews it every third of `ttlMs`.
 * @throws GatewayError `QUEUE_LAYOUT_MISMATCH` when another count is in use (see {@link claimQueueLayout}).
 */
export async function holdQueueLayout(deps: { redis: RedisClient; logger: Logger }, names: QueueNames, options: HoldQueueLayoutOptions = {}): Promise<HeldQueueLayout> {
  const ttlMs = options.ttlMs ?? DEFAULT_HEARTBEAT_TTL_MS;
  const member = options.member ?? newProcessId();
  await claimQueueLayout(deps.redis, names, { member, ttlMs });
  let moved: number | null = null;
  let inFlight: Promise<void> | undefined;
  const renew = (): Promise<void> => {
    if (moved !== null) return Promise.resolve();
    inFlight ??= renewQueueLayout(deps.redis, names, member, ttlMs).then((recorded) => {
      if (recorded === null || moved !== null) return;
      moved = recorded;
      clearInterval(timer);
      deps.logger.error({ queuePrefix: names.queuePrefix, queueShards: names.queueShards, recordedShards: recorded }, layoutMovedMessage(names.queuePrefix, names.queueShards, recorded));
      options.onMoved?.(recorded);
    }, (err: unknown) => deps.logger.debug({ err }, 'queue layout not renewed')).finally(() => { inFlight = undefined; });
    return inFlight;
  };
  const timer = setInterval(() => void renew(), Math.max(100, Math.floor(ttlMs / 3)));
  timer.unref();
  return {
    get moved() { return moved; },
    check() {
      if (moved !== null) throw new GatewayError('QUEUE_LAYOUT_MOVED', layoutMovedMessage(names.queuePrefix, names.queueShards, moved));
    },
    renew,
    async release() {
      clearInterval(timer);
      const released = releaseQueueLayout(deps.redis, names, member).catch((err: unknown) => deps.logger.debug({ err }, 'queue layout not released'));
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([released, new Promise<void>((resolve) => { timeout = setTimeout(resolve, RELEASE_BOUND_MS); })]);
      clearTimeout(timeout);
    },
  };
}

/**
 * `producer`, refusing to enqueue turns once `layout` moved: a turn in the old layout would wait in
 * a shard no worker reads. The messages stay in their inboxes and the pending index, so a gateway
 * with the recorded count enqueues their turns (its pending sweeper).
 */
export function guardTurnProducer(producer: TurnProducer, layout: Pick<HeldQueueLayout, 'check'>): TurnProducer {
  return {
    async submitInbound(message) {
      layout.check();
      return producer.submitInbound(message);
    },
    async enqueueTurn(sessionId) {
      layout.check();
      return producer.enqueueTurn(sessionId);
    },
    close: () => producer.close(),
  };
}
