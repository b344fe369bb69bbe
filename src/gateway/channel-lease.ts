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
import type { Channel, InboundHandler } from '../../channels/channel.js';
import type { Logger } from '../log.js';
import { acquireChannelLease, announceChannelLeaseRelease, releaseChannelLease, renewChannelLease, subscribeChannelLeaseReleases } from '../redis/channel-lease.js';
import { duplicateRedis, type RedisClient } from '../redis/client.js';
import { channelLeaseKeys } from '../redis/keys.js';

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
 */
export function createLeasedChannel(deps: LeasedChannelDeps, options: ChannelLeaseOptions): LeasedChannel {
  const ttlMs = options.ttlMs ?? DEFAULT_CHANNEL_LEASE_MS;
  if (!(Number.isInteger(ttlMs) && ttlMs >= 100)) throw new RangeError(`\`ttlMs\` must be an integer ≥ 100 (got ${ttlMs})`);
  const name = deps.sender.name;
  const holder = options.holder ?? gatewayHolderName();
  const keys = channelLeaseKeys(name, options.botId, options.keyPrefix);
  const member = `${name}:${options.botId}`;
  const log = deps.log.child({ component: 'channel-lease', channel: name, holder });
  const renewEveryMs = Math.floor(ttlMs / 5);
  const marginMs = Math.floor(ttlMs / 4);
  const tickMs = Math.floor(ttlMs / 10);
  const s: { role: ChannelLeaseRole; term?: Term; onMessage?: InboundHandler; timer?: NodeJS.Timeout; busy: boolean; stopping: Promise<void>; notBefore: number; unsubscribe?: () => Promise<void> } = {
    role: 'standby', busy: false, stopping: Promise.resolve(), notBefore: 0,
  };

  const lose = (t: Term, reason: string): Promise<void> => {
    if (s.term !== t) return s.stopping;
    if (reason !== STOP_REASON) t.validUntil = Math.min(t.validUntil, performance.now());
    s.term = undefined;
    if (s.role !== 'stopped') s.role = 'standby';
    log.warn({ fence: t.fence, reason }, 'channel lease given up: this gateway stops receiving');
    s.stopping = (async () => {
      await t.receiver.stop().catch((err: unknown) => log.error({ err }, 'channel did not stop cleanly'));
      // After the receiver stopped: only then may another gateway take over (told at once).
      if (await releaseChannelLease(deps.redis, keys, t.fence).catch(() => false)) await announceChannelLeaseRelease(deps.redis, member, options.keyPrefix);
    })();
    return s.stopping;
  };

  const take = async (): Promise<Term | undefined> => {
    if (performance.now() < s.notBefore || !s.onMessage) return undefined;
    await s.stopping;
    const sentAt = performance.now();
    const fence = await acquireChannelLease(deps.redis, { channel: name, botId: options.botId, prefix: options.keyPrefix }, holder, ttlMs);
    if (fence === null) return undefined;
    if (s.role === 'stopped') {
      await releaseChannelLease(deps.redis, keys, fence);
      return undefined;
    }
    const t = { fence, validUntil: sentAt + ttlMs - marginMs, lastRenewAt: sentAt } as Term;
    // Until validUntil, also while it stops: a graceful stop may still confirm what it handled.
    t.receiver = deps.createReceiver(() => t.validUntil - performance.now());
    s.term = t;
    s.role = 'holding';
    log.info({ fence }, 'channel lease taken: this gateway receives');
    // On failure the receiver is stopped and the lease released before `starting` rejects.
    t.starting = t.receiver.start(s.onMessage).catch(async (err: unknown) => {
      log.error({ err, fence }, 'channel did not start; the lease is given up and taken again later');
      s.notBefore = performance.now() + ttlMs;
      await lose(t, 'start failed');
      throw err;
    });
    t.starting.catch(() => undefined); // a later term's failure is logged above; the first start rethrows it
    return t;
  };

  const renew = async (t: Term): Promise<void> => {
    const sentAt = performance.now();
    t.lastRenewAt = sentAt;
    try {
      const renewed = await renewChannelLease(deps.redis, keys, t.fence, ttlMs);
      if (!renewed) await lose(t, 'another gateway holds the lease, or it expired');
      else if (s.term === t) t.validUntil = Math.max(t.validUntil, sentAt + ttlMs - marginMs);
    } catch (err) {
      log.warn({ err, fence: t.fence }, 'channel lease renewal failed; retrying');
    }
  };

  const step = async (): Promise<void> => {
    const t = s.term;
    if (t) {
      if (performance.now() - t.lastRenewAt >= renewEveryMs) await renew(t);
      return;
    }
    await take().catch((err: unknown) => log.warn({ err }, 'channel lease could not be checked; retrying'));
  };

  /** Runs one step now (a release was announced), unless one runs already. */
  const wake = (): void => {
    if (s.role !== 'standby' || s.term || s.busy) return;
    s.busy = true;
    void step().finally(() => { s.busy = false; });
  };

  const tick = (): void => {
    if (s.role === 'stopped') return;
    // The deadline is checked on every tick, whether or not a Redis command hangs.
    const t = s.term;
    if (t && performance.now() >= t.validUntil) void lose(t, 'lease not renewed in time');
    if (!s.busy) {
      s.busy = true;
      void step().finally(() => { s.busy = false; });
    }
    s.timer = setTimeout(tick, tickMs);
  };

  /** Subscribes to announced releases on a connection of its own; without it, the ticks still take over. */
  const listenForReleases = async (): Promise<void> => {
    const subscriber = duplicateRedis(deps.redis);
    subscriber.on('error', (err: Error) => log.debug({ err }, 'channel lease subscriber error'));
    try {
      s.unsubscribe = await subscribeChannelLeaseReleases(subscriber, (released) => { if (released === member) wake(); }, options.keyPrefix);
    } catch (err) {
      subscriber.disconnect();
      log.warn({ err }, 'releases of the channel lease are not announced to this gateway; it checks every tenth of the lease');
    }
  };

  const overrides = {
    get leaseRole(): ChannelLeaseRole {
      return s.role;
    },
    async start(onMessage: InboundHandler): Promise<void> {
      s.onMessage = onMessage;
      await listenForReleases();
      s.busy = true;
      const t = await take().catch((err: unknown) => {
        log.warn({ err }, 'channel lease could not be checked; standing by and retrying');
        return undefined;
      });
      s.busy = false;
      // Renewals run while the receiver connects (a Discord login may take a while).
      if (s.role !== 'stopped') s.timer = setTimeout(tick, tickMs);
      if (!t) log.info({}, 'another gateway holds the channel lease: standing by');
      else await t.starting;
    },
    async stop(): Promise<void> {
      s.role = 'stopped';
      clearTimeout(s.timer);
      if (s.term) await lose(s.term, STOP_REASON);
      await s.stopping;
      await s.unsubscribe?.();
    },
  };
  return new Proxy(deps.sender, {
    get: (target, prop) => (prop in overrides ? Reflect.get(overrides, prop) : Reflect.get(target, prop)),
    has: (target, prop) => prop in overrides || Reflect.has(target, prop),
  }) as LeasedChannel;
}
