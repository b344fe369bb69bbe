/**
 * The Discord channel (discord.js 14): DMs (Channel partials), guild text channels when the bot is
 * mentioned (configurable), threads as separate sessions. The gateway does not re-deliver
 * events, so a failed `onMessage` is logged and answered with a short "try again" reply.
 */
import { Client, Events, GatewayIntentBits, Partials, type Message } from 'discord.js';
import { COMMAND_NAMES } from '../../src/core/commands.js';
import { ChannelError } from '../../src/errors.js';
import { createOutageLog, createSilentLogger, type Logger, type OutageLog } from '../../src/log.js';
import { DEFAULT_DISCORD_API_ROOT } from '../../src/core/inbound.js';
import { CHANNEL_ERROR_CODES, type Channel, type ChannelHealth, type ChatTarget, type InboundHandler, type OutgoingText, type SentMessage } from '../channel.js';
import { discordDownloadHosts, downloadDiscordAttachment } from './files.js';
import { watchGatewayHealth } from './gateway-health.js';
import { guardGatewayPayloads } from './payload-guard.js';
import { DEFAULT_DEFER_AFTER_MS, handleInteraction } from './buttons.js';
import { createTokenWatch } from './token-watch.js';
import { sendDiscordText, sendDiscordTyping, toDiscordChannelError } from './send.js';
import { deleteDiscordMessage, editDiscordText } from './live-reply.js';
import type { DiscordCursorStore } from './catch-up-cursors.js';
import { discoveredPlaces, fetchMissed, placesToCatchUp, type CatchUpOptions, type KnownChannel } from './catch-up.js';
import { toInboundMessage, type DiscordMessageLike, type GuildTrigger } from './translate.js';

/** The text commands recognised in guild channels without a mention. */
export const DEFAULT_DISCORD_COMMANDS: readonly string[] = COMMAND_NAMES;

/** The reply when a message could not be accepted (Discord will not send it again). */
export const NOT_ACCEPTED_REPLY = 'Sorry, I could not take your message just now. Please send it again in a moment.';

/** Options of {@link createDiscordChannel}. */
export interface DiscordChannelOptions {
  /** Bot token from the Developer Portal. Required. */
  token: string;
  /** REST API root (discord.js `rest.api`). Default {@link DEFAULT_DISCORD_API_ROOT} (tests point it at a fake). */
  apiRoot?: string;
  /** When the bot answers in guild channels. Default `mention`. */
  guildTrigger?: GuildTrigger;
  /** Commands answered in guild channels without a mention. Default {@link DEFAULT_DISCORD_COMMANDS}. */
  commandNames?: readonly string[];
  /** Renewal period of the typing indicator, in ms. Default 8000 (it lasts ~10 s). */
  typingIntervalMs?: number;
  /** How long `start` waits for the gateway to become ready, in ms. Default 30 000. */
  readyTimeoutMs?: number;
  /**
   * Longest rate-limit wait done inside a REST call, in ms; longer ones throw `CHANNEL_RATE_LIMITED`.
   * Default 0: every rate limit surfaces at once, and the gateway's outbound job (the one retry
   * layer) waits it out as a delayed job.
   */
  maxRateLimitWaitMs?: number;
  /**
   * How long `stop` waits for messages already received to be handed to `onMessage` (Discord
   * never re-delivers them), in ms; what is still queued after that is dropped and logged. Default 10 000.
   */
  stopDrainTimeoutMs?: number;
  /**
   * How long a button press waits for the gateway's answer before it is deferred (then the message is
   * edited, or a follow-up sent, once the answer is there), in ms. Discord allows 3 s. Default 2000.
   */
  pressDeferAfterMs?: number;
}

/** Resolved {@link DiscordChannelOptions}. */
export type ResolvedDiscordChannelOptions = Required<DiscordChannelOptions>;

/** The Discord channel. */
export interface DiscordChannel extends Channel {
  readonly name: 'discord';
  /** The bot's user id, known after `start`. */
  readonly botUserId: string | undefined;
  /**
   * Down from the moment the gateway connection closes until discord.js resumed (or re-identified)
   * it; down for good, with `tokenRejected`, once a REST call was refused with 401 (a revoked token).
   */
  health(): ChannelHealth;
}

const DEFAULTS = {
  apiRoot: DEFAULT_DISCORD_API_ROOT,
  guildTrigger: 'mention',
  commandNames: DEFAULT_DISCORD_COMMANDS,
  typingIntervalMs: 8_000,
  readyTimeoutMs: 30_000,
  maxRateLimitWaitMs: 0,
  stopDrainTimeoutMs: 10_000,
  pressDeferAfterMs: DEFAULT_DEFER_AFTER_MS,
} satisfies Omit<ResolvedDiscordChannelOptions, 'token'>;

/** What {@link createDiscordChannel} needs besides its options. */
export interface DiscordChannelDeps {
  log?: Logger;
  /** Catch-up after each connect (needs the cursors in Redis); none without. */
  catchUp?: CatchUpOptions;
  /** Called for each gateway payload discord.js could not read and that was dropped, with its event type (a metric). */
  onDroppedPayload?: (event: string) => void;
}

/** Creates the Discord channel. `@throws` ChannelError (`CHANNEL_PERMANENT`) on invalid options. */
export function createDiscordChannel(deps: DiscordChannelDeps = {}, options: DiscordChannelOptions): DiscordChannel {
  const resolved: ResolvedDiscordChannelOptions = { ...DEFAULTS, ...options };
  validate(resolved);
  const log = (deps.log ?? createSilentLogger()).child({ component: 'channel', channel: 'discord' });
  const client = createClient(resolved);
  guardGatewayPayloads(client, log, deps.onDroppedPayload);
  const state: { onMessage?: InboundHandler; marks?: ConnectedMarks } = {};
  // While Redis is away every message fails: one warning per 30 s.
  const outage = createOutageLog(log);
  const handle = (like: DiscordMessageLike) => handleMessage(like, client, state.onMessage, { ...resolved, cursors: deps.catchUp?.cursors, outage }, log);
  const router = routeInOrder(client, (message) => handle(toMessageLike(message)), log);
  client.on(Events.Error, (err) => log.error({ err }, 'discord client error'));
  // Button presses (approval questions): answered where they were pressed (buttons.ts).
  client.on(Events.InteractionCreate, (interaction) => void handleInteraction(interaction, state.onMessage, log, resolved.pressDeferAfterMs));
  const gateway = watchGatewayHealth(client);
  const token = createTokenWatch(log);
  const downloadHosts = discordDownloadHosts(resolved.apiRoot);

  return {
    name: 'discord',
    maxMessageLength: 2000,
    lengthUnit: 'codepoints',
    formatting: 'markdown',
    typingIntervalMs: resolved.typingIntervalMs,
    get botUserId() {
      return client.user?.id;
    },
    async start(onMessage) {
      state.onMessage = onMessage;
      await login(client, resolved);
      log.info({ botUserId: client.user?.id }, 'discord channel started');
      if (deps.catchUp) {
        const options = deps.catchUp;
        // When a gateway of the bot was last connected (before this one marks itself): the gap to catch up.
        const gapStart = await options.cursors.lastConnected().catch(() => null);
        state.marks = markWhileConnected(options, () => gateway.health().ok, log);
        catchUp(options, client, router, handle, log, gapStart);
        // A new session later (Discord refused to resume the old one) has missed events too; a resumed one replays them.
        const marks = state.marks;
        client.on(Events.ShardReady, () => catchUp(options, client, router, handle, log, marks.lastMarkedMs()));
      }
    },
    async stop() {
      // Messages received but still queued per channel would be lost: let them through first.
      const busyChannels = await router.drain(resolved.stopDrainTimeoutMs);
      if (busyChannels > 0) log.warn({ busyChannels, timeoutMs: resolved.stopDrainTimeoutMs }, 'discord channel stopped with messages still queued');
      state.onMessage = undefined;
      // Connected until now: the next gateway's catch-up starts here.
      await state.marks?.stop();
      await client.destroy();
    },
    health: () => token.health() ?? gateway.health(),
    async send(target: ChatTarget, message: OutgoingText): Promise<SentMessage> {
      return token.guard(() => sendDiscordText(client.rest, target, message));
    },
    async sendTyping(target: ChatTarget): Promise<void> {
      await token.guard(() => sendDiscordTyping(client.rest, target));
    },
    downloadAttachment: (attachment, download) => downloadDiscordAttachment(attachment, download, downloadHosts),
    editMessage: (target, messageId, message) => token.guard(() => editDiscordText(client.rest, target, messageId, message)),
    closeChoices: (target, messageId, message) => token.guard(() => editDiscordText(client.rest, target, messageId, message, true)),
    deleteMessage: (target, messageId) => token.guard(() => deleteDiscordMessage(client.rest, target, messageId)),
  };
}

function createClient(options: ResolvedDiscordChannelOptions): Client {
  const client = new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent, GatewayIntentBits.DirectMessages],
    partials: [Partials.Channel],
    // No retries inside discord.js (5xx, network); rate limits over `maxRateLimitWaitMs` surface as
    // ChannelError (retryAfterMs): the outbound job is the one retry layer.
    rest: { api: options.apiRoot, retries: 0, rejectOnRateLimit: (limit) => limit.retryAfter > options.maxRateLimitWaitMs },
  });
  // Sending needs no gateway connection: an instance that never logs in (a standby gateway's) sends too.
  client.rest.setToken(options.token);
  return client;
}

/** Logs in and waits for the gateway to be ready. `@throws` ChannelError. */
async function login(client: Client, options: ResolvedDiscordChannelOptions): Promise<void> {
  const ready = waitForReady(client, options.readyTimeoutMs);
  ready.catch(() => undefined); // observed below; avoids an unhandled rejection if login fails first
  try {
    await client.login(options.token);
    await ready;
  } catch (err) {
    await client.destroy();
    throw toDiscordChannelError(err, 'login');
  }
}

/** Per-channel order of message handling (see {@link routeInOrder}). */
interface Router {
  /** Runs `work` in channel `key`'s order: after what is queued there, before what comes next. */
  enqueue(key: string, work: () => Promise<void>): Promise<void>;
  drain(timeoutMs: number): Promise<number>;
}

/**
 * After a connect: what each recently active channel received while no gateway was connected, one
 * channel after the other (REST rate limits), each in that channel's order — live messages of a
 * channel wait until its missed ones are handed on. Runs in the background; failures are logged.
 */
function catchUp(options: CatchUpOptions, client: Client, router: Router, handle: (like: DiscordMessageLike) => Promise<void>, log: Logger, gapStartMs: number | null): void {
  void (async () => {
    const withCursor = await placesToCatchUp(options);
    const discovered = discoveredPlaces(knownGuildChannels(client), new Set(withCursor.map((p) => p.channelId)), gapStartMs, options);
    const places = [...withCursor, ...discovered].slice(0, options.maxChannels ?? 200);
    let previous = Promise.resolve();
    let missed = 0;
    const done = places.map((place) => {
      const turn = previous.then(async () => {
        for (const like of await fetchMissed({ rest: client.rest, log }, options, place)) {
          missed++;
          await handle(like);
        }
      });
      previous = turn.catch(() => undefined);
      return router.enqueue(place.channelId, () => turn);
    });
    await Promise.all(done);
    if (missed > 0) log.info({ messages: missed, channels: places.length }, 'discord messages sent while disconnected were caught up');
  })().catch((err: unknown) => log.warn({ err }, 'discord catch-up failed; the next connect tries again'));
}

/** The guild text channels and threads discord.js knows since the connect (GUILD_CREATE), with their newest message then. */
function knownGuildChannels(client: Client): KnownChannel[] {
  const known: KnownChannel[] = [];
  for (const channel of client.channels.cache.values()) {
    if (channel.isDMBased() || !channel.isTextBased()) continue;
    known.push({
      channelId: channel.id, guildId: channel.guildId, lastMessageId: channel.lastMessageId ?? null,
      ...(channel.isThread() && channel.parentId ? { threadParentId: channel.parentId } : {}),
    });
  }
  return known;
}

/** The connected marks of a running channel (see {@link markWhileConnected}). */
interface ConnectedMarks {
  /** When this process last recorded it was connected, ms since epoch (null before its first mark). */
  lastMarkedMs(): number | null;
  /** Records a last mark (if connected) and stops. */
  stop(): Promise<void>;
}

/**
 * Records every `connectedIntervalMs`, while the gateway connection is up, that a gateway of the bot
 * is connected — where the next connect (this process's after a drop, or another gateway's) starts
 * reading channels that have no cursor. Best effort: a failed write is logged at debug.
 */
function markWhileConnected(options: CatchUpOptions, connected: () => boolean, log: Logger): ConnectedMarks {
  let last: number | null = null;
  const mark = async () => {
    if (!connected()) return;
    const at = Date.now();
    await options.cursors.markConnected(at).then(() => { last = at; }, (err: unknown) => log.debug({ err }, 'discord connected mark not recorded'));
  };
  void mark();
  const timer = setInterval(() => void mark(), options.connectedIntervalMs ?? 30_000);
  timer.unref();
  return {
    lastMarkedMs: () => last,
    async stop() {
      clearInterval(timer);
      await mark();
    },
  };
}

/**
 * Hands messages to `handle` one at a time per channel, in arrival order (handlers are async).
 * `drain` resolves once no channel has a message queued or in hand (messages arriving meanwhile
 * included), or after `timeoutMs`, with the number of channels still busy.
 */
function routeInOrder(client: Client, handle: (message: Message) => Promise<void>, log: Logger): Router {
  const chains = new Map<string, Promise<void>>();
  const enqueue = (key: string, work: () => Promise<void>): Promise<void> => {
    const next = (chains.get(key) ?? Promise.resolve())
      .then(work)
      .catch((err: unknown) => log.error({ err }, 'message handling failed'));
    chains.set(key, next);
    void next.finally(() => {
      if (chains.get(key) === next) chains.delete(key);
    });
    return next;
  };
  client.on(Events.MessageCreate, (message) => void enqueue(message.channelId, () => handle(message)));
  return {
    enqueue,
    async drain(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<'expired'>((resolve) => { timer = setTimeout(() => resolve('expired'), timeoutMs); });
      try {
        while (chains.size > 0) {
          if ((await Promise.race([Promise.all(chains.values()), expired])) === 'expired') break;
        }
      } finally {
        clearTimeout(timer);
      }
      return chains.size;
    },
  };
}

/** Extracts the translation's input from a discord.js message. */
export function toMessageLike(message: Message): DiscordMessageLike {
  const channel = message.channel;
  const like: DiscordMessageLike = {
    id: message.id,
    channelId: message.channelId,
    guildId: message.guildId,
    author: { id: message.author.id, bot: message.author.bot, username: message.author.username, displayName: message.author.globalName ?? undefined },
    content: message.content,
    mentionedUserIds: [...message.mentions.users.keys()],
    attachments: [...message.attachments.values()].map((a) => ({ url: a.url, contentType: a.contentType ?? undefined, name: a.name, size: a.size })),
  };
  if (channel.isThread() && channel.parentId) like.threadParentId = channel.parentId;
  if (message.mentions.repliedUser) like.repliedToUserId = message.mentions.repliedUser.id;
  if (message.reference?.messageId) like.referenceMessageId = message.reference.messageId;
  return like;
}

async function handleMessage(message: DiscordMessageLike, client: Client, onMessage: InboundHandler | undefined, options: ResolvedDiscordChannelOptions & { cursors?: DiscordCursorStore; outage: OutageLog }, log: Logger): Promise<void> {
  const botId = client.user?.id;
  if (!botId || !onMessage) return;
  const translated = toInboundMessage(message, botId, { guildTrigger: options.guildTrigger, commandNames: options.commandNames, receivedAt: Date.now() });
  if (translated.kind === 'ignore') {
    log.debug({ channelId: message.channelId, reason: translated.reason }, 'message ignored');
    return;
  }
  const target = { chatId: message.channelId, replyTo: message.id };
  try {
    // Attachments go to the gateway, which reads them or answers (queued like every reply) why it cannot.
    await onMessage(translated.message);
    options.outage.available();
    // Handed on: a later connect catches up only what comes after it (best effort; the seen markers drop repeats).
    const place = { channelId: message.channelId, guildId: message.guildId, ...(message.threadParentId ? { threadParentId: message.threadParentId } : {}) };
    await options.cursors?.record(place, message.id).catch((err: unknown) => log.warn({ err }, 'discord catch-up cursor not recorded'));
  } catch (err) {
    options.outage.error({ err, channelId: message.channelId, messageId: message.id }, 'message not accepted');
    await sendDiscordText(client.rest, target, { text: NOT_ACCEPTED_REPLY, mode: 'plain' }).catch((sendErr: unknown) => {
      log.warn({ err: sendErr }, 'could not tell the user their message was not accepted');
    });
  }
}

/** Resolves when the client is ready; rejects on timeout or when the gateway closes first. */
function waitForReady(client: Client, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off(Events.ClientReady, onReady);
      reject(new ChannelError(`discord gateway not ready after ${timeoutMs} ms`, { retryable: true, code: CHANNEL_ERROR_CODES.transient }));
    }, timeoutMs);
    timer.unref();
    const onReady = (): void => {
      clearTimeout(timer);
      resolve();
    };
    client.once(Events.ClientReady, onReady);
  });
}

function validate(options: ResolvedDiscordChannelOptions): void {
  const issues: string[] = [];
  if (options.token.trim() === '' || /\s/.test(options.token)) issues.push('`token` must be the bot token from the Developer Portal (no spaces)');
  if (!(options.typingIntervalMs > 0)) issues.push(`\`typingIntervalMs\` must be > 0 (got ${options.typingIntervalMs})`);
  if (!(options.readyTimeoutMs > 0)) issues.push(`\`readyTimeoutMs\` must be > 0 (got ${options.readyTimeoutMs})`);
  if (!(options.pressDeferAfterMs >= 0 && options.pressDeferAfterMs < 3000)) issues.push(`\`pressDeferAfterMs\` must be in [0, 3000) (got ${options.pressDeferAfterMs})`);
  if (!(options.stopDrainTimeoutMs >= 0)) issues.push(`\`stopDrainTimeoutMs\` must be ≥ 0 (got ${options.stopDrainTimeoutMs})`);
  if (issues.length > 0) throw new ChannelError(`invalid discord options: ${issues.join('; ')}`, { retryable: false, code: CHANNEL_ERROR_CODES.permanent });
}
