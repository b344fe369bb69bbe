/**
 * The health of the Discord gateway connection, from discord.js's shard events: down from the
 * moment a shard's WebSocket closes (`shardReconnecting`: discord.js reopens it and resumes; or
 * `shardDisconnect`: it will not), with the close code and the latest connection error; up again
 * at `shardResume` or `shardReady`.
 */
import { Events, GatewayCloseCodes, type Client, type WebSocketShard } from 'discord.js';
import type { ChannelHealth } from '../channel.js';

/** A shard's trouble. */
interface Down {
  sinceMs: number;
  closeCode: number | undefined;
  reopening: boolean;
  lastError?: string;
}

/** Watches `client`'s shards; `health()` reads what they said last. `now`: ms since epoch. */
export function watchGatewayHealth(client: Client, now: () => number = Date.now): { health(): ChannelHealth } {
  const down = new Map<number, Down>();
  const lastClose = new Map<number, number>();
  const watched = new WeakSet<WebSocketShard>();
  const watchShards = (): void => {
    for (const [id, shard] of client.ws.shards) {
      if (watched.has(shard)) continue;
      watched.add(shard);
      shard.on('close', (event) => lastClose.set(id, event.code));
    }
  };
  const markDown = (id: number, reopening: boolean): void => {
    const closeCode = lastClose.get(id);
    const known = down.get(id);
    down.set(id, { sinceMs: known?.sinceMs ?? now(), closeCode, reopening, ...(known?.lastError ? { lastError: known.lastError } : {}) });
  };
  client.on(Events.ShardReady, (id) => {
    watchShards();
    down.delete(id);
  });
  client.on(Events.ShardResume, (id) => down.delete(id));
  client.on(Events.ShardReconnecting, (id) => markDown(id, true));
  client.on(Events.ShardDisconnect, (_event, id) => markDown(id, false));
  client.on(Events.ShardError, (error, id) => {
    const known = down.get(id);
    if (known) known.lastError = error.message;
  });
  return {
    health() {
      const first = [...down.values()].sort((a, b) => a.sinceMs - b.sinceMs)[0];
      if (!first) return { ok: true };
      const tokenRejected = first.closeCode === GatewayCloseCodes.AuthenticationFailed;
      return { ok: false, reason: describe(first), sinceMs: first.sinceMs, ...(tokenRejected ? { tokenRejected } : {}) };
    },
  };
}

function describe(down: Down): string {
  const code = down.closeCode === undefined ? '' : ` (close code ${down.closeCode}${GatewayCloseCodes[down.closeCode] ? `: ${GatewayCloseCodes[down.closeCode]}` : ''})`;
  const next = down.reopening ? 'reconnecting' : 'discord.js will not reconnect; restart the gateway';
  return `gateway connection closed${code}; ${next}${down.lastError ? `; last error: ${down.lastError}` : ''}`;
}
