/**
 * Contains the failures of discord.js's packet handlers. A gateway payload discord.js cannot read
 * (a `MESSAGE_CREATE` whose `mentions` is not an array, or whose `d` is null: a proxy, a bug, a
 * future field change) throws inside its handler, where nothing catches it: an unhandled rejection
 * that would end the process and every chat with it. Such a payload is dropped instead, counted, and
 * logged once per event type every {@link DROPPED_LOG_INTERVAL_MS}.
 */
import type { Client } from 'discord.js';
import type { Logger } from '../../src/log.js';

/** Shortest interval between two log lines about dropped payloads of one event type, ms. */
export const DROPPED_LOG_INTERVAL_MS = 30_000;

/** discord.js's packet dispatcher (`WebSocketManager#handlePacket`, private in its typings). */
interface PacketDispatcher {
  handlePacket(packet?: { t?: unknown }, shard?: unknown): boolean;
}

/**
 * Wraps `client`'s packet dispatcher so a handler that throws drops that payload: `onDropped` is
 * called with its event type, and the first drop of each type (then one every
 * {@link DROPPED_LOG_INTERVAL_MS}, with how many since) is logged at warn.
 */
export function guardGatewayPayloads(client: Client, log: Logger, onDropped: (event: string) => void = () => undefined, now: () => number = Date.now): void {
  const ws = client.ws as unknown as PacketDispatcher;
  const handlePacket = ws.handlePacket.bind(ws);
  const lastLogged = new Map<string, { atMs: number; droppedSince: number }>();
  ws.handlePacket = (packet, shard) => {
    try {
      return handlePacket(packet, shard);
    } catch (err) {
      const event = typeof packet?.t === 'string' ? packet.t : 'unknown';
      onDropped(event);
      const last = lastLogged.get(event);
      if (last && now() - last.atMs < DROPPED_LOG_INTERVAL_MS) {
        last.droppedSince++;
        return true;
      }
      lastLogged.set(event, { atMs: now(), droppedSince: 0 });
      log.warn({ err, event, droppedSinceLastLine: last?.droppedSince ?? 0 }, 'discord gateway payload dropped');
      return true;
    }
  };
}
