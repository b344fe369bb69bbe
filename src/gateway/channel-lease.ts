/**
 * A channel whose receiving side (Telegram long polling, the Discord gateway connection) runs in
 * exactly one gateway at a time per bot, chosen by a fenced lease in Redis; sending runs
 * everywhere. Timing: the holder renews every `ttlMs / 5` and counts its lease valid until
 * `ttlMs − ttlMs / 4` after it SENT the last renewal that succeeded (Redis set the expiry later
 * than that, so the real expiry is later still). At that point it stops receiving, whatever Redis
 * says; another gateway can take the lease only once it expired in Redis or was released, a margin
 * of `ttlMs / 4` after. A receiver is also told how long it may still hold the connection
 * (`windowMs`): Telegram shortens each long poll to end inside the lease, so a paused holder's last
 * poll is over before anyone may poll again.
 */
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Channel, ChannelHealth, InboundHandler } from '../../channels/channel.js';
import { createOutageLog, type Logger, type OutageLog } from '../log.js';
import { acquireChannelLease, announceChannelLeaseRelease, releaseChannelLease, renewChannelLease, subscribeChannelLeaseReleases } from '../redis/channel-lease.js';
import { duplicateRedis, type RedisClient } from '../redis/client.js';
import { channelLeaseKeys, type ChannelLeaseKeys } from '../redis/keys.js';

/** Why a term ends when the gateway stops: the only end that keeps the rest of its window. */
const STOP_REASON = 'the gateway stops';

/** Default lease period of a channel connection, ms: a dead holder's channel is taken over within it. */
export const DEFAULT_CHANNEL_LEASE_MS = 10_000;

/** Whether this gateway runs a leased channel's receiving side now. */
export type ChannelLeaseRole = 'holding' | 'standby' | 'stopped';

/** Options of {@link createLeasedChannel}. */
export interface ChannelLeaseOptions {
  /** Lease period, ms (≥ 100). Default {@link DEFAULT_CHANNEL_LEASE_MS}. */
  ttlMs?: number;
  /** The bot's identity in the lease key: a hash of its token (`botIdentity`), never the token. */
  botId: string;
  /** This gateway's name in the lease. Default {@link gatewayHolderName}. */
  holder?: string;
  /** Key prefix. */
  keyPrefix: string;
}

/** What {@link createLeasedChannel} needs. */
export interface LeasedChannelDeps {
  /** A fail-fast connection (bounded retries): a hung command must not hold the renewals up. */
  redis: RedisClient;
  log: Logger;
  /** The instance that sends (never started here): delivery, typing and every other member go to it. */
  sender: Channel;
  /**
   * Builds a fresh receiving instance for one term, given how long it may still hold the
   * connection (ms, ≤ 0 once the term is over).
   */
  createReceiver: (windowMs: () => number) => Channel;
}

/** A {@link Channel} whose `start` takes the lease or stands by; `leaseRole` says which. */
export type LeasedChannel = Channel & { readonly leaseRole: ChannelLeaseRole };

/** This process's name in channel leases: `host:pid`. */
export function gatewayHolderName(): string {
  return `${hostname()}:${process.pid}`;
}

interface Term {
  fence: number;
  receiver: Channel;
  /** performance.now() until which this gateway may receive. */
  validUntil: number;
  lastRenewAt: number;
  starting: Promise<void>;
}

/**
 * Wraps `deps.sender` so that `start` runs the receiving side only while this gateway holds the
 * lease (standing by otherwise, and taking over when the holder is gone) and `stop` stops it and
 * releases the lease at once; the release is announced (pub/sub), so a standby gateway takes over
 * at once (at its next check, within `ttlMs / 10`, if the announcement is missed).
 * `start` rejects only when this gateway took the lease and its receiver failed to start.
 * @throws RangeError when `ttlMs` is not an integer ≥ 100.
 */
export function createLeasedChannel(deps: LeasedChannelDeps, options: ChannelLeaseOptions): LeasedChannel {
  const runner = new ChannelLeaseRunner(deps, options);
  const overrides = {
    get leaseRole(): ChannelLeaseRole {
      return runner.role;
    },
    start: (onMessage: InboundHandler) => runner.start(onMessage),
    stop: () => runner.stop(),
    // The receiving side is this term's receiver (a standby gateway receives nothing); sending is the sender's.
    health: (): ChannelHealth => runner.health(),
  };
  // Every other member (send, sendTyping, streaming, downloads…) is the sender's.
  return new Proxy(deps.sender, {
    get: (target, prop) => (prop in overrides ? Reflect.get(overrides, prop) : Reflect.get(target, prop)),
    has: (target, prop) => prop in overrides || Reflect.has(target, prop),
  }) as LeasedChannel;
}

/** The lease's state machine: standby ⇄ holding, then stopped. One instance per leased channel. */
class ChannelLeaseRunner {
  role: ChannelLeaseRole = 'standby';
  private term: Term | undefined;
  private onMessage: InboundHandler | undefined;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private stopping: Promise<void> = Promise.resolve();
  private notBefore = 0;
  private unsubscribe: (() => Promise<void>) | undefined;
  /** Whether `start` returned: later terms' failures are this runner's to report. */
  private started = false;
  private readonly ttlMs: number;
  private readonly keys: ChannelLeaseKeys;
  private readonly member: string;
  private readonly holder: string;
  private readonly log: Logger;
  /** Checks and renewals a Redis outage fails one after another: one warning per 30 s. */
  private readonly outage: OutageLog;

  constructor(private readonly deps: LeasedChannelDeps, private readonly options: ChannelLeaseOptions) {
    this.ttlMs = options.ttlMs ?? DEFAULT_CHANNEL_LEASE_MS;
    if (!(Number.isInteger(this.ttlMs) && this.ttlMs >= 100)) throw new RangeError(`\`ttlMs\` must be an integer ≥ 100 (got ${this.ttlMs})`);
    const name = deps.sender.name;
    this.holder = options.holder ?? gatewayHolderName();
    this.keys = channelLeaseKeys(name, options.botId, options.keyPrefix);
    this.member = `${name}:${options.botId}`;
    this.log = deps.log.child({ component: 'channel-lease', channel: name, holder: this.holder });
    this.outage = createOutageLog(this.log);
  }

  async start(onMessage: InboundHandler): Promise<void> {
    this.onMessage = onMessage;
    await this.listenForReleases();
    this.busy = true;
    const t = await this.take().catch((err: unknown) => {
      this.outage.warn({ err }, 'channel lease could not be checked; standing by and retrying');
      return undefined;
    });
    this.busy = false;
    this.started = true;
    // Renewals run while the receiver connects (a Discord login may take a while).
    if (this.role !== 'stopped') this.timer = setTimeout(() => this.tick(), this.tickMs);
    if (!t) this.log.info({}, 'another gateway holds the channel lease: standing by');
    else await t.starting;
  }

  /** The health of this term's receiver; up while standing by (the holder's heartbeat says how it stands). */
  /** The receiver's health while it is down; else the sender's (a refused token shows there, in standby too). */
  health(): ChannelHealth {
    const receiving = this.term?.receiver.health?.() ?? { ok: true };
    if (!receiving.ok) return receiving;
    return this.deps.sender.health?.() ?? receiving;
  }

  async stop(): Promise<void> {
    this.role = 'stopped';
    clearTimeout(this.timer);
    if (this.term) await this.lose(this.term, STOP_REASON);
    await this.stopping;
    await this.unsubscribe?.();
  }

  private get tickMs(): number {
    return Math.floor(this.ttlMs / 10);
  }

  /** Where the holder's own deadline lies after a renewal sent at `sentAt`: `ttlMs / 4` before the earliest expiry. */
  private deadlineAfter(sentAt: number): number {
    return sentAt + this.ttlMs - Math.floor(this.ttlMs / 4);
  }

  /** Checks the deadline (never held up by a hanging Redis command), then renews or tries to take. */
  private tick(): void {
    if (this.role === 'stopped') return;
    const t = this.term;
    if (t && performance.now() >= t.validUntil) void this.lose(t, 'lease not renewed in time');
    this.runStep();
    this.timer = setTimeout(() => this.tick(), this.tickMs);
  }

  private runStep(): void {
    if (this.busy) return;
    this.busy = true;
    void this.step().finally(() => { this.busy = false; });
  }

  private async step(): Promise<void> {
    const t = this.term;
    if (!t) {
      await this.take().catch((err: unknown) => this.outage.warn({ err }, 'channel lease could not be checked; retrying'));
    } else if (performance.now() - t.lastRenewAt >= Math.floor(this.ttlMs / 5)) {
      await this.renew(t);
    }
  }

  /** Takes the lease if it is free and starts a fresh receiver. @throws on Redis errors. */
  private async take(): Promise<Term | undefined> {
    if (performance.now() < this.notBefore || !this.onMessage) return undefined;
    await this.stopping;
    const sentAt = performance.now();
    const { botId, keyPrefix } = this.options;
    const fence = await acquireChannelLease(this.deps.redis, { channel: this.deps.sender.name, botId, prefix: keyPrefix }, this.holder, this.ttlMs);
    if (fence === null) return undefined;
    if (this.role === 'stopped') {
      await releaseChannelLease(this.deps.redis, this.keys, fence);
      return undefined;
    }
    const t = { fence, validUntil: this.deadlineAfter(sentAt), lastRenewAt: sentAt } as Term;
    // Until validUntil, also while it stops: a graceful stop may still confirm what it handled.
    t.receiver = this.deps.createReceiver(() => t.validUntil - performance.now());
    this.term = t;
    this.role = 'holding';
    this.log.info({ fence }, 'channel lease taken: this gateway receives');
    // On failure the receiver is stopped and the lease released before `starting` rejects.
    const later = this.started;
    t.starting = t.receiver.start(this.onMessage).catch(async (err: unknown) => {
      // The gateway's own start reports its first failure; a later term's is logged here.
      if (later) this.log.error({ err, fence }, 'channel did not start; the lease is given up and taken again later');
      this.notBefore = performance.now() + this.ttlMs;
      await this.lose(t, 'start failed');
      throw err;
    });
    t.starting.catch(() => undefined); // a later term's failure is logged above; the first start rethrows it
    return t;
  }

  private async renew(t: Term): Promise<void> {
    const sentAt = performance.now();
    t.lastRenewAt = sentAt;
    try {
      const renewed = await renewChannelLease(this.deps.redis, this.keys, t.fence, this.ttlMs);
      if (!renewed) await this.lose(t, 'another gateway holds the lease, or it expired');
      else if (this.term === t) t.validUntil = Math.max(t.validUntil, this.deadlineAfter(sentAt));
    } catch (err) {
      this.outage.warn({ err, fence: t.fence }, 'channel lease renewal failed; retrying');
    }
  }

  /** Ends term `t`: its receiver stops, THEN the lease is released and the release announced. */
  private lose(t: Term, reason: string): Promise<void> {
    if (this.term !== t) return this.stopping;
    if (reason !== STOP_REASON) t.validUntil = Math.min(t.validUntil, performance.now());
    this.term = undefined;
    if (this.role !== 'stopped') this.role = 'standby';
    this.log.warn({ fence: t.fence, reason }, 'channel lease given up: this gateway stops receiving');
    this.stopping = (async () => {
      await t.receiver.stop().catch((err: unknown) => this.log.error({ err }, 'channel did not stop cleanly'));
      const released = await releaseChannelLease(this.deps.redis, this.keys, t.fence).catch(() => false);
      if (released) await announceChannelLeaseRelease(this.deps.redis, this.member, this.options.keyPrefix);
    })();
    return this.stopping;
  }

  /** Subscribes to announced releases on a connection of its own; without it, the ticks still take over. */
  private async listenForReleases(): Promise<void> {
    const subscriber = duplicateRedis(this.deps.redis);
    subscriber.on('error', (err: Error) => this.log.debug({ err }, 'channel lease subscriber error'));
    const onReleased = (released: string): void => {
      if (released === this.member && this.role === 'standby' && !this.term) this.runStep();
    };
    try {
      this.unsubscribe = await subscribeChannelLeaseReleases(subscriber, onReleased, this.options.keyPrefix);
    } catch (err) {
      subscriber.disconnect();
      this.log.warn({ err }, 'releases of the channel lease are not announced to this gateway; it checks every tenth of the lease');
    }
  }
}
