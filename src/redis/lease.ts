import type { RedisClient } from './client.js';
import { runScriptWithOptions } from './scripts.js';
import type { SessionKeys } from './keys.js';

/** Default lease time to live in ms; a running turn renews it every third of it. */
export const DEFAULT_LEASE_TTL_MS = 15_000;

/**
 * Takes the session's lease if nobody holds it.
 * @returns The fencing token (≥ 1) to pass to commits, or null when another holder has it.
 */
export async function acquireLease(redis: RedisClient, keys: SessionKeys, ttlMs: number = DEFAULT_LEASE_TTL_MS): Promise<number | null> {
  const token = Number(await runScriptWithOptions(redis, 'acquireLease', [keys.lease, keys.meta], { ttlMs }));
  return token > 0 ? token : null;
}

/** Extends the lease if `fence` still holds it. @returns false when the lease was lost. */
export async function renewLease(redis: RedisClient, keys: SessionKeys, fence: number, ttlMs: number = DEFAULT_LEASE_TTL_MS): Promise<boolean> {
  return Number(await runScriptWithOptions(redis, 'renewLease', [keys.lease], { fence: String(fence), ttlMs })) === 1;
}

/** Releases the lease if `fence` still holds it. @returns false when it was already gone. */
export async function releaseLease(redis: RedisClient, keys: SessionKeys, fence: number): Promise<boolean> {
  return Number(await runScriptWithOptions(redis, 'releaseLease', [keys.lease], { fence: String(fence) })) === 1;
}

/** A lease kept alive by a timer until `release()`; `lost` turns true when a renewal failed. */
export interface HeldLease {
  readonly fence: number;
  readonly lost: boolean;
  /**
   * Renews the lease now. @returns false (and `lost` turns true) when another holder has it or it
   * expired: the caller must stop writing for the session. @throws on Redis errors.
   */
  confirm(): Promise<boolean>;
  /** Stops renewing and releases the lease. */
  release(): Promise<void>;
}

/**
 * Acquires the lease and renews it every `ttlMs / 3` until released.
 * @returns null when another holder has it.
 */
export async function holdLease(redis: RedisClient, keys: SessionKeys, ttlMs: number = DEFAULT_LEASE_TTL_MS): Promise<HeldLease | null> {
  const fence = await acquireLease(redis, keys, ttlMs);
  if (fence === null) return null;
  let lost = false;
  const timer = setInterval(() => {
    renewLease(redis, keys, fence, ttlMs).then((ok) => { if (!ok) lost = true; }, () => { /* next tick retries */ });
  }, Math.max(50, Math.floor(ttlMs / 3)));
  timer.unref();
  return {
    fence,
    get lost() { return lost; },
    async confirm() {
      if (lost) return false;
      if (!(await renewLease(redis, keys, fence, ttlMs))) lost = true;
      return !lost;
    },
    async release() {
      clearInterval(timer);
      await releaseLease(redis, keys, fence);
    },
  };
}
