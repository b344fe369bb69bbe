import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';

/** A running gateway: channels, ingest, hygiene, delivery, and the HTTP server (monitor + web chat). */
export interface GatewayHandle {
  /** Base URL of the HTTP server, e.g. `http://127.0.0.1:8787`. */
  httpUrl: string;
  /** URL of the web chat page, when the web channel runs. */
  webChatUrl?: string;
  /** Stops the channels, drains deliveries, closes the server and the connections it opened. */
  close(): Promise<void>;
}

/** Dependencies of {@link startGateway}. */
export interface GatewayDeps {
  config: Config;
  /** A connection with `maxRetriesPerRequest: null` (BullMQ). */
  redis: Redis;
  logger: Logger;
}

/** Starts the gateway. Work in progress: the lead is writing it (ingest, commands, hygiene, delivery wiring). */
export async function startGateway(_deps: GatewayDeps): Promise<GatewayHandle> {
  throw new Error('startGateway is not implemented yet');
}
