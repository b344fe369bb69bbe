/**
 * Channel health, written and judged in one place: what a gateway puts in its heartbeat for each
 * channel (from the start's progress, the channel lease and `Channel.health()`), and the one
 * verdict on the rows every surface reads back (`chatgate status`, `doctor`, the dashboard;
 * `/readyz` judges its own gateway's rows the same way).
 */
import type { Channel } from '../../channels/channel.js';
import type { ChannelName } from '../core/inbound.js';
import type { ChannelsPanel } from '../monitor/index.js';
import type { RedisClient } from '../redis/client.js';
import { gatewayChannelRows, readHeartbeats, type ChannelHealthBeat, type GatewayChannelRow } from '../redis/heartbeats.js';
import { ADVICE, TOKEN_ADVICE, type ChannelsStatus } from './start-channels.js';

/** The verdict on the channels: `down` when one is not connected (standby counts as up); `skip` without a gateway. */
export interface ChannelsVerdict {
  status: 'ok' | 'down' | 'skip';
  /** Each channel and its state (by gateway when several run), with the reason of a disconnected one. */
  detail: string;
  /** What to do, when down. */
  fix?: string;
}

const STILL_CONNECTING_FIX = 'a channel still connecting has not reached its platform: see the gateway\'s log, and `chatgate doctor` for the tokens and API roots';

/** Each channel's health as a gateway beats it: connecting or waiting while the start runs, then standby, connected or disconnected. */
export function channelHealthOf(channels: readonly Channel[], status: ChannelsStatus, now: number = Date.now()): Record<string, ChannelHealthBeat> {
  const connected = new Set(status.connected ?? []);
  const next = channels.find((channel) => !connected.has(channel.name));
  return Object.fromEntries(channels.map((channel): [string, ChannelHealthBeat] => {
    if (!connected.has(channel.name)) return [channel.name, { state: channel === next ? 'connecting' : 'waiting' }];
    const health = channel.health?.() ?? { ok: true };
    // A standby gateway receives nothing but sends: a refused token is its trouble too.
    const standby = 'leaseRole' in channel && channel.leaseRole === 'standby';
    if (standby && (health.ok || !health.tokenRejected)) return [channel.name, { state: 'standby' }];
    if (health.ok) return [channel.name, { state: 'connected' }];
    const since = Math.min(health.sinceMs, now);
    return [channel.name, { state: 'disconnected', reason: health.reason, sinceMs: since, ...(health.tokenRejected ? { tokenRejected: true } : {}) }];
  }));
}

/** Judges the channel rows of the live gateways (`gatewayChannelRows`); `gateways`: how many run. */
export function judgeChannels(rows: readonly GatewayChannelRow[], gateways: number, now: number = Date.now()): ChannelsVerdict {
  if (gateways === 0) return { status: 'skip', detail: 'no gateway is running' };
  const byGateway = new Map<string, string[]>();
  for (const row of rows) {
    const where = gateways > 1 ? `${row.gateway.host} pid ${row.gateway.pid}` : '';
    byGateway.set(where, [...(byGateway.get(where) ?? []), describeRow(row, now)]);
  }
  const detail = [...byGateway].map(([where, parts]) => `${where ? `${where}: ` : ''}${parts.join(', ')}`).join('; ') || 'none configured';
  const bad = rows.filter((row) => row.state !== 'connected' && row.state !== 'standby');
  if (bad.length === 0) return { status: 'ok', detail };
  return { status: 'down', detail, fix: [...new Set(bad.map(fixOf))].join('; ') };
}

/** `/readyz`'s check of one gateway's own channels (as {@link channelHealthOf} gives them). @throws Error with the verdict's detail when one is down. */
export function assertChannelsUp(health: Record<string, ChannelHealthBeat>): void {
  const rows = Object.entries(health).map(([channel, h]) => ({ ...h, channel, gateway: { id: 'self', host: 'self', pid: process.pid } }));
  const verdict = judgeChannels(rows, 1);
  if (verdict.status === 'down') throw new Error(verdict.detail);
}

/** The dashboard's channels panel: the heartbeats read once, judged as `chatgate status` judges them. */
export async function readChannelsPanel(redis: RedisClient, keyPrefix: string): Promise<ChannelsPanel> {
  const live = (await readHeartbeats(redis, { keyPrefix })).processes.filter((beat) => beat.role === 'gateway' && beat.alive);
  const rows = gatewayChannelRows(live);
  return {
    ...judgeChannels(rows, live.length),
    rows: rows.map((row) => ({ gateway: `${row.gateway.host} pid ${row.gateway.pid}`, channel: row.channel, state: row.state, reason: row.reason, sinceMs: row.sinceMs })),
  };
}

function describeRow(row: GatewayChannelRow, now: number): string {
  if (row.state !== 'disconnected') return `${row.channel} ${row.state}`;
  const since = row.sinceMs === undefined ? '' : ` for ${seconds(now - row.sinceMs)}`;
  return `${row.channel} disconnected${since}${row.reason ? ` (${row.reason})` : ''}`;
}

function fixOf(row: GatewayChannelRow): string {
  if (row.state !== 'disconnected') return STILL_CONNECTING_FIX;
  if (row.tokenRejected && TOKEN_ADVICE[row.channel]) return TOKEN_ADVICE[row.channel]!;
  const advice = ADVICE[row.channel as ChannelName] ?? 'see the gateway\'s log';
  return `${row.channel} lost its platform after connecting and keeps trying: ${advice}`;
}

function seconds(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s} s` : `${Math.round(s / 60)} min`;
}
