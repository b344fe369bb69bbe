import type { ChannelLeaseHolder } from '../redis/channel-lease.js';
import type { HeartbeatStatus } from '../redis/heartbeats.js';
import type { StatusCheck } from './status-check.js';

/**
 * The `leases` line of `chatgate status`: which gateway holds which channel connection (Telegram
 * polling, Discord), from the channel leases in Redis, and which gateways stand by. `down` when a
 * gateway runs but nobody holds a channel, or its holder is not among the live gateways.
 */
export function leasesCheck(rows: readonly ChannelLeaseHolder[], gateways: readonly HeartbeatStatus[]): StatusCheck {
  const live = gateways.filter((g) => g.alive);
  if (rows.length === 0) return { name: 'leases', status: 'skip', detail: 'no leased channel (Telegram polling or Discord) has run on this Redis' };
  if (live.length === 0) return { name: 'leases', status: 'skip', detail: 'no gateway is running' };
  const parts: string[] = [];
  let orphaned = false;
  for (const row of rows) {
    const holder = row.holder ? live.find((g) => `${g.host}:${g.pid}` === row.holder) : undefined;
    const standby = live.filter((g) => g !== holder).map((g) => `${g.host} pid ${g.pid}`);
    const standing = standby.length > 0 ? `; standing by: ${standby.join(', ')}` : '';
    if (holder) parts.push(`${row.channel} (bot ${row.botId}) held by ${holder.host} pid ${holder.pid} since ${new Date(row.heldSinceMs!).toISOString()}${standing}`);
    else {
      orphaned = true;
      parts.push(`${row.channel} (bot ${row.botId}) ${row.holder ? `held by ${row.holder}, which sends no heartbeat` : 'held by nobody'}${standing}`);
    }
  }
  if (!orphaned) return { name: 'leases', status: 'ok', detail: parts.join('; ') };
  return {
    name: 'leases', status: 'down', detail: parts.join('; '),
    fix: 'a standby gateway takes a free or expired lease within CHATGATE_CHANNEL_LEASE_MS; if none does, see its log (a bot no longer configured keeps its line until its keys are deleted)',
  };
}
