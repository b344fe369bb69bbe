import type { Hono } from 'hono';
import type { Channel } from '../../channels/channel.js';
import { createDiscordChannel } from '../../channels/discord/index.js';
import { createTelegramChannel } from '../../channels/telegram/index.js';
import { createWebChannel } from '../../channels/web/index.js';
import type { Config } from '../config.js';
import { createAccessGuard } from '../monitor/index.js';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';

/** The channels a gateway runs, and how they hook into its HTTP server (web chat, webhooks). */
export interface GatewayChannels {
  list: Channel[];
  /** Adds the channels' HTTP routes to the gateway's server. */
  mount?: (app: Hono) => void;
}

/**
 * Builds the channels the configuration asks for: Telegram and Discord when their tokens are set;
 * the web chat when no bot token is set, or whenever the HTTP server is bound to loopback. With
 * `redis`, the web chat keeps its replies in Redis streams, so every gateway can serve it.
 */
export function createChannels(config: Config, logger: Logger, redis?: RedisClient): GatewayChannels {
  const list: Channel[] = [];
  const mounts: Array<(app: Hono) => void> = [];
  if (config.telegram) {
    const telegram = createTelegramChannel({ log: logger }, {
      token: config.telegram.token, webhookUrl: config.telegram.webhookUrl, webhookSecret: config.telegram.webhookSecret, groupTrigger: config.groupTrigger,
    });
    list.push(telegram);
    if (config.telegram.webhookUrl) {
      const path = new URL(config.telegram.webhookUrl).pathname;
      mounts.push((app) => app.post(path, telegram.webhookHandler()));
    }
  }
  if (config.discord) list.push(createDiscordChannel({ log: logger }, { token: config.discord.token, guildTrigger: config.groupTrigger }));
  if (list.length === 0 || config.http.loopback) {
    // Off loopback the web chat needs the monitor token like the dashboard; on loopback it stays open
    // (to local Host names only, which stops DNS rebinding).
    const guard = createAccessGuard({ host: config.http.host, monitorToken: config.http.monitorToken, tokenOnLoopback: false });
    const web = createWebChannel({ log: logger, guard, redis, keyPrefix: config.redis.keyPrefix });
    list.push(web);
    mounts.push((app) => app.route('/', web.app));
  }
  return { list, mount: (app) => mounts.forEach((mount) => mount(app)) };
}
