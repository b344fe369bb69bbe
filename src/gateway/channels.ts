import type { Hono } from 'hono';
import type { Channel } from '../../channels/channel.js';
import type { SetAsideUpdate } from '../../channels/telegram/index.js';
import { createApiAnswerRelay, createOpenAiApiChannel, type ApiKey } from '../../channels/openai-api/index.js';
import { createWebChannel } from '../../channels/web/index.js';
import type { ChannelName } from '../core/inbound.js';
import { botIdentity } from '../redis/channel-lease.js';
import { createLeasedChannel, type ChannelLeaseRole, type LeasedChannel } from './channel-lease.js';
import { isLoopbackHost } from '../monitor/hosts.js';
import { createAccessGuard } from '../monitor/index.js';
import type { Logger } from '../log.js';
import { NOOP_METRICS, type Metrics } from '../metrics.js';
import { setAsideChannelUpdate } from '../redis/channel-dead-letters.js';
import type { RedisClient } from '../redis/client.js';
import { sessionKeys, type SessionKeys } from '../redis/keys.js';
import { readTranscriptBefore } from '../redis/transcript.js';
import { readUsage } from '../redis/usage.js';

/** The channels a gateway runs, and how they hook into its HTTP server (web chat, webhooks). */
export interface GatewayChannels {
  list: Channel[];
  /**
   * Where the delivery sends replies of a channel this gateway does not run: the API's answer relay
   * when the API has no keys here (any gateway may take an API reply; it goes on to the gateway whose
   * request waits). Never started, no routes, and not in `list`: health, status and metrics do not show them.
   */
  deliverOnly?: Channel[];
  /** Adds the channels' HTTP routes to the gateway's server. */
  mount?: (app: Hono) => void;
  /** Whether this gateway runs or stands by for each leased channel (Telegram polling, Discord). */
  leaseRoles?: () => Partial<Record<ChannelName, ChannelLeaseRole>>;
}

/** Which channels to build, and what they need. */
export interface ChannelsOptions {
  /** Runs the Telegram channel (long polling, or the webhook when `webhookUrl` is set). */
  telegram?: { token: string; apiRoot?: string; webhookUrl?: string; webhookSecret?: string };
  /** Runs the Discord channel; `apiRoot` is discord.js's `rest.api` (default `DEFAULT_DISCORD_API_ROOT` of src/core/inbound.ts). */
  discord?: { token: string; apiRoot?: string };
  /** Runs the OpenAI-compatible API (`/v1/chat/completions`, `/v1/models`) behind these bearer keys. */
  api?: { keys: readonly ApiKey[] };
  /** When the bot answers in groups and guild channels. Default `mention`. */
  groupTrigger?: 'mention' | 'always';
  /** Address the HTTP server binds to: the web chat runs whenever it is loopback. */
  host: string;
  /** The monitor token, which guards the web chat off loopback. */
  monitorToken?: string;
  /** Key prefix of the web chat's reply streams. */
  keyPrefix: string;
  /** Largest attachment accepted, bytes (photo size choice, web upload body limit). Default 10 MB. */
  maxAttachmentBytes?: number;
  /**
   * With `deps.redis`: Telegram polling and the Discord connection run in one gateway at a time per
   * bot, chosen by a lease of `ttlMs` (default 10 000). Telegram's webhook mode needs no lease.
   */
  lease?: { ttlMs?: number; holder?: string };
}

/**
 * Builds the channels asked for: Telegram and Discord when their tokens are set, the OpenAI-compatible
 * API when it has keys (else, with `deps.redis`, its answer relay only: see `deliverOnly`); the web chat when
 * no bot token is set, or whenever the HTTP server is bound to loopback. With `deps.redis`, the web
 * chat keeps its replies in Redis streams, so every gateway can serve it. grammY and discord.js are
 * loaded only when their channel runs (discord.js alone is ~30 MiB of a gateway's memory).
 */
export async function createChannels(deps: { logger: Logger; redis?: RedisClient; metrics?: Metrics }, options: ChannelsOptions): Promise<GatewayChannels> {
  const { logger } = deps;
  const groupTrigger = options.groupTrigger ?? 'mention';
  const list: Channel[] = [];
  const deliverOnly: Channel[] = [];
  const mounts: Array<(app: Hono) => void> = [];
  if (options.telegram) {
    const { createTelegramChannel } = await import('../../channels/telegram/index.js');
    const { token, apiRoot, webhookUrl, webhookSecret } = options.telegram;
    const redis = deps.redis;
    // An update that keeps failing is kept in Redis (a dead letter) before the bot moves past it.
    const setAside = redis ? async (entry: SetAsideUpdate) => {
      await setAsideChannelUpdate(redis, entry, options.keyPrefix);
      (deps.metrics ?? NOOP_METRICS).record({ type: 'inbound', channel: 'telegram', outcome: 'set_aside' });
    } : undefined;
    const telegramOptions = { token, apiRoot, webhookUrl, webhookSecret, groupTrigger, ...(options.maxAttachmentBytes !== undefined ? { maxAttachmentBytes: options.maxAttachmentBytes } : {}) };
    const telegram = createTelegramChannel({ log: logger, setAside }, telegramOptions);
    // Webhook mode needs no leader: every gateway accepts Telegram's POSTs.
    list.push(webhookUrl ? telegram : leased(telegram, token, (pollWindowMs) => createTelegramChannel({ log: logger, setAside, pollWindowMs }, telegramOptions)));
    if (webhookUrl) {
      const path = new URL(webhookUrl).pathname;
      mounts.push((app) => app.post(path, telegram.webhookHandler()));
    }
  }
  if (options.discord) {
    const { createDiscordChannel } = await import('../../channels/discord/index.js');
    const { createDiscordCursors } = await import('../../channels/discord/redis-cursors.js');
    const { token, apiRoot } = options.discord;
    const discordOptions = { token, guildTrigger: groupTrigger, ...(apiRoot ? { apiRoot } : {}) };
    // With Redis, each connect catches up what was sent while no gateway was connected (a restart, a fail-over).
    // A gateway payload discord.js could not read is dropped (channels/discord/payload-guard.ts): counted here.
    const onDroppedPayload = () => (deps.metrics ?? NOOP_METRICS).record({ type: 'inbound', channel: 'discord', outcome: 'malformed' });
    const discordDeps = { log: logger, onDroppedPayload, ...(deps.redis ? { catchUp: { cursors: createDiscordCursors(deps.redis, botIdentity(token), options.keyPrefix) } } : {}) };
    list.push(leased(createDiscordChannel(discordDeps, discordOptions), token, () => createDiscordChannel(discordDeps, discordOptions)));
  }
  if (options.api) {
    const redis = deps.redis;
    // An answer reports the tokens the session's ledger (what `/usage` shows) grew by during its request.
    const usage = redis ? (sessionId: string) => readUsage(redis, sessionKeys(sessionId, options.keyPrefix)) : undefined;
    // When several requests of a session wait, the transcript says which messages an answer followed.
    const answeredBy = redis ? (sessionId: string, replyId: string) => messagesAnsweredBy(redis, sessionKeys(sessionId, options.keyPrefix), replyId) : undefined;
    const api = createOpenAiApiChannel({ log: logger, redis, readUsage: usage, answeredBy }, { keys: options.api.keys, keyPrefix: options.keyPrefix });
    list.push(api);
    mounts.push((app) => app.route('/', api.app));
  } else if (deps.redis) {
    // Another gateway may run the API (a rolling restart turning the keys on): its answers delivered here go to it.
    deliverOnly.push(createApiAnswerRelay({ log: logger, redis: deps.redis }, { keyPrefix: options.keyPrefix }));
  }
  // The web chat runs when no bot runs (the API is no chat of its own) or on loopback.
  if (list.every((channel) => channel.name === 'api') || isLoopbackHost(options.host)) {
    // Off loopback the web chat needs the monitor token like the dashboard; on loopback it stays open
    // (to local Host names only, which stops DNS rebinding).
    // Multipart writes pass: they are the page's file uploads (the cross-site check still applies).
    const guard = createAccessGuard({ host: options.host, monitorToken: options.monitorToken, tokenOnLoopback: false, multipartWrites: true });
    const redis = deps.redis;
    // The page's history comes from the session's transcript (channels/web/history.ts).
    const readTranscript = redis ? (sessionId: string, before: string | undefined, count: number) => readTranscriptBefore(redis, sessionKeys(sessionId, options.keyPrefix), before, count) : undefined;
    const web = createWebChannel({ log: logger, guard, redis, keyPrefix: options.keyPrefix, readTranscript }, { maxUploadBytes: options.maxAttachmentBytes });
    list.push(web);
    mounts.push((app) => app.route('/', web.app));
  }
  return { list, deliverOnly, mount: (app) => mounts.forEach((mount) => mount(app)), leaseRoles: () => leaseRolesOf(list) };

  /** `sender` wrapped in the channel lease when there is Redis; as it is otherwise. */
  function leased(sender: Channel, token: string, createReceiver: (windowMs: () => number) => Channel): Channel {
    if (!deps.redis) return sender;
    const lease = { botId: botIdentity(token), keyPrefix: options.keyPrefix, ttlMs: options.lease?.ttlMs, holder: options.lease?.holder };
    return createLeasedChannel({ redis: deps.redis, log: logger, sender, createReceiver }, lease);
  }
}

/** How far back an answer is looked for in the transcript: it was committed just before its delivery. */
const ANSWER_LOOKBACK_ENTRIES = 200;

/** The inbound ids of the user messages before the answer `replyId` among the transcript's newest entries; null when it is not among them. */
async function messagesAnsweredBy(redis: RedisClient, keys: SessionKeys, replyId: string): Promise<ReadonlySet<string> | null> {
  const entries = await readTranscriptBefore(redis, keys, undefined, ANSWER_LOOKBACK_ENTRIES);
  const at = entries.findIndex((entry) => entry.type === 'message' && entry.replyId === replyId);
  if (at === -1) return null;
  // Newest first: the entries after the answer's index are older than it.
  return new Set(entries.slice(at + 1).flatMap((entry) => (entry.type === 'message' && entry.inboundId ? [entry.inboundId] : [])));
}

function leaseRolesOf(list: readonly Channel[]): Partial<Record<ChannelName, ChannelLeaseRole>> {
  const roles: Partial<Record<ChannelName, ChannelLeaseRole>> = {};
  for (const channel of list) if ('leaseRole' in channel) roles[channel.name] = (channel as LeasedChannel).leaseRole;
  return roles;
}
