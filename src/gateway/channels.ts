import type { Hono } from 'hono';
import type { Channel } from '../../channels/channel.js';
import { createTelegramChannel } from '../../channels/telegram/index.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';

/** The channels a gateway runs, and how they hook into its HTTP server (web chat, webhooks). */
export interface GatewayChannels {
  list: Channel[];
  /** Adds the channels' HTTP routes to the gateway's server. */
  mount?: (app: Hono) => void;
}

/** Builds the channels the configuration asks for: Telegram and Discord with a token, web chat otherwise. */
export function createChannels(config: Config, logger: Logger): GatewayChannels {
  const list: Channel[] = [];
  const mounts: Array<(app: Hono) => void> = [];
  if (config.telegram) {
    const telegram = createTelegramChannel({ log: logger }, {
      token: config.telegram.token, webhookUrl: config.telegram.webhookUrl, webhookSecret: config.telegram.webhookSecret,
    });
    list.push(telegram);
    if (config.telegram.webhookUrl) {
      const path = new URL(config.telegram.webhookUrl).pathname;
      mounts.push((app) => app.post(path, telegram.webhookHandler()));
    }
  }
  return { list, mount: (app) => mounts.forEach((mount) => mount(app)) };
}
