import type { Channel } from '../../channels/channel.js';
import type { BudgetSettings } from '../core/budget.js';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import { budgetSettingsDigest, newProcessId, readHeartbeats, startHeartbeat, type Heartbeat, type HeartbeatStatus } from '../redis/heartbeats.js';
import { channelHealthOf } from './channel-health.js';
import type { ChannelsStatus } from './start-channels.js';

/** Options of {@link startGatewayHeartbeat}. */
export interface GatewayHeartbeatOptions {
  keyPrefix: string;
  /** How long a beat lives, ms (renewed every third). */
  ttlMs: number;
  httpUrl: string;
  version: string;
  /** The budget settings its early answer checks markers against: their digest goes in each beat. Absent: none. */
  budgets?: BudgetSettings;
}

/**
 * The heartbeat of a gateway: host, pid, start time, version, its HTTP URL and each channel's
 * state (connecting, waiting for the ones before it, connected, standby, or disconnected with the
 * reason), read from `status` as the channels start and from each channel's `health()` after,
 * and the digest of its budget settings.
 */
export function startGatewayHeartbeat(deps: { redis: RedisClient; logger: Logger }, channels: readonly Channel[], status: ChannelsStatus, options: GatewayHeartbeatOptions): Promise<Heartbeat> {
  const id = newProcessId();
  const startedAt = Date.now();
  const budgetDigest = budgetSettingsDigest(options.budgets);
  return startHeartbeat(deps, {
    keyPrefix: options.keyPrefix,
    current: () => ({
      role: 'gateway', id, host: id.split(':')[0]!, pid: process.pid, startedAt, version: options.version, beatAt: Date.now(), ttlMs: options.ttlMs, budgetDigest,
      gateway: { httpUrl: options.httpUrl, channels: channelHealthOf(channels, status) },
    }),
  });
}

/**
 * `/readyz`'s workers check: resolves when at least one worker's heartbeat is alive.
 * @throws Error saying that none is, and what to do.
 */
export async function checkLiveWorkers(redis: RedisClient, keyPrefix: string): Promise<void> {
  const reason = await noLiveWorker(redis, keyPrefix);
  if (reason !== null) throw new Error(`${reason}; ${START_A_WORKER}`);
}

/** Why no worker takes turns ({@link noWorkerReason}), or null when one is alive: `/status` says so. */
export async function noLiveWorker(redis: RedisClient, keyPrefix: string): Promise<string | null> {
  const workers = (await readHeartbeats(redis, { keyPrefix })).processes.filter((beat) => beat.role === 'worker');
  return workers.some((beat) => beat.alive) ? null : noWorkerReason(workers);
}

/** What to do when no worker is alive. */
export const START_A_WORKER = 'start one with `chatgate worker` (as many as you like) or `chatgate start`';

/** Why no worker takes turns, for `/readyz`, `doctor` and `status`: messages wait in the queue until one runs. */
export function noWorkerReason(workers: readonly HeartbeatStatus[]): string {
  const last = workers[0];
  const lastSeen = last ? ` (the last one, ${last.host} pid ${last.pid}, was heard of ${Math.round((Date.now() - last.beatAt) / 1000)} s ago)` : '';
  return `no worker is alive${lastSeen}: messages wait in the queue`;
}
