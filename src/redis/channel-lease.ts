/**
 * The lease of a channel connection in Redis: which gateway polls Telegram or holds the Discord
 * gateway connection for one bot. Taken only when free (expired or released), with a fencing token
 * that grows for ever; renewed and released only by the token that holds it (the session lease's
 * scripts serve here too: `acquire-lease-2.lua` with a holder, `renew-lease-1.lua`, `release-lease-1.lua`).
 */
import { createHash } from 'node:crypto';
import type { RedisClient } from './client.js';
import { channelLeaseIndexKey, channelLeaseKeys, channelLeaseReleasedChannel, DEFAULT_KEY_PREFIX, type ChannelLeaseKeys } from './keys.js';
import { runScriptWithOptions } from './scripts.js';

/** Who holds one channel connection, as `chatgate status` and the monitor show it. */
export interface ChannelLeaseHolder {
  /** `telegram` or `discord`. */
  channel: string;
  /** The bot's identity: a hash of its token (never the token). */
  botId: string;
  /** The gateway that holds it (`host:pid`), or undefined while nobody does. */
  holder?: string;
  /** The holder's fencing token. */
  fence?: number;
  /** Since when it holds it, ms since epoch (Redis clock). */
  heldSinceMs?: number;
  /** How long the lease lasts unless renewed, ms. */
  expiresInMs?: number;
}

/** The bot identity used in lease keys: the first 16 hex digits of SHA-256 of the token. */
export function botIdentity(token: string): string {
  return createHash('sha256').update(token).digest('hex').slice(0, 16);
}

/**
 * Takes the lease of `channel` for `botId` if it is free, recording `holder`.
 * @returns the fencing token (≥ 1), or null when another gateway holds it. @throws on Redis errors
 * (and on an empty `holder`: the script refuses it).
 */
export async function acquireChannelLease(redis: RedisClient, lease: { channel: string; botId: string; prefix?: string }, holder: string, ttlMs: number): Promise<number | null> {
  const prefix = lease.prefix ?? DEFAULT_KEY_PREFIX;
  const keys = channelLeaseKeys(lease.channel, lease.botId, prefix);
  const fence = Number(await runScriptWithOptions(redis, 'acquireLease', [keys.lease, keys.meta], { ttlMs, holder }));
  if (fence <= 0) return null;
  // In its own slot (listing only): a failure here costs nothing but the status line.
  await redis.sadd(channelLeaseIndexKey(prefix), `${lease.channel}:${lease.botId}`).catch(() => undefined);
  return fence;
}

/** Extends the lease if `fence` still holds it. @returns false when it expired or another holds it. @throws on Redis errors. */
export async function renewChannelLease(redis: RedisClient, keys: ChannelLeaseKeys, fence: number, ttlMs: number): Promise<boolean> {
  return Number(await runScriptWithOptions(redis, 'renewLease', [keys.lease], { fence: String(fence), ttlMs })) === 1;
}

/** Releases the lease if `fence` still holds it (another gateway may take it at once). @returns false when it was gone. */
export async function releaseChannelLease(redis: RedisClient, keys: ChannelLeaseKeys, fence: number): Promise<boolean> {
  return Number(await runScriptWithOptions(redis, 'releaseLease', [keys.lease], { fence: String(fence) })) === 1;
}

/**
 * Tells standby gateways that the lease of `member` (`<channel>:<botId>`) was released, so one takes
 * it at once instead of at its next check. Best effort: they check on their own anyway.
 */
export async function announceChannelLeaseRelease(redis: RedisClient, member: string, prefix: string = DEFAULT_KEY_PREFIX): Promise<void> {
  await redis.publish(channelLeaseReleasedChannel(prefix), member).catch(() => undefined);
}

/**
 * Calls `onReleased(member)` for every announced release, on `subscriber` (a connection of its own,
 * which this takes over). @returns a function that unsubscribes and disconnects it.
 */
export async function subscribeChannelLeaseReleases(subscriber: RedisClient, onReleased: (member: string) => void, prefix: string = DEFAULT_KEY_PREFIX): Promise<() => Promise<void>> {
  const channel = channelLeaseReleasedChannel(prefix);
  subscriber.on('message', (from: string, member: string) => {
    if (from === channel) onReleased(member);
  });
  await subscriber.subscribe(channel);
  return async () => {
    await subscriber.unsubscribe(channel).catch(() => undefined);
    subscriber.disconnect();
  };
}

/** Every leased channel connection and who holds it now (three reads a channel). @throws on Redis errors. */
export async function readChannelLeases(redis: RedisClient, prefix: string = DEFAULT_KEY_PREFIX): Promise<ChannelLeaseHolder[]> {
  const members = (await redis.smembers(channelLeaseIndexKey(prefix))).sort();
  const rows: ChannelLeaseHolder[] = [];
  for (const member of members) {
    const [channel, botId] = splitMember(member);
    const keys = channelLeaseKeys(channel, botId, prefix);
    const [fence, meta, pttl] = await Promise.all([redis.get(keys.lease), redis.hgetall(keys.meta), redis.pttl(keys.lease)]);
    const row: ChannelLeaseHolder = { channel, botId };
    // The holder fields belong to the token in the lease only; a stale pair means nobody holds it.
    if (fence !== null && meta.holderFence === fence) {
      Object.assign(row, { holder: meta.holder, fence: Number(fence), heldSinceMs: Number(meta.heldSinceMs), expiresInMs: Math.max(0, pttl) });
    }
    rows.push(row);
  }
  return rows;
}

function splitMember(member: string): [string, string] {
  const at = member.indexOf(':');
  return at === -1 ? [member, ''] : [member.slice(0, at), member.slice(at + 1)];
}
