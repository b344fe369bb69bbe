/**
 * The Telegram channel (grammY): long polling by default, webhook mode when a public URL is
 * configured. An update counts as handled only when `onMessage` resolved: in polling mode the
 * offset is not advanced past a failed update, so Telegram re-delivers it; in webhook mode the
 * handler answers 500, so Telegram retries the webhook. An update that failed `maxUpdateAttempts`
 * times (malformed, or its handling throws) is set aside (`deps.setAside`: a dead letter) and the
 * bot goes on with the next: one bad update never stalls every chat. Nothing is sent from inside
 * an update handler (media the bot cannot read goes to the gateway, which answers through the
 * outbound queue like every reply).
 */
import { Bot, webhookCallback, type Context as GrammyContext } from 'grammy';
import type { BotCommand, Update } from 'grammy/types';
import type { Context as HonoContext } from 'hono';
import { COMMAND_MENU } from '../../src/core/commands.js';
import { backoffDelayMs } from '../../src/core/retry.js';
import { ChannelError } from '../../src/errors.js';
import { createSilentLogger, type Logger } from '../../src/log.js';
import { DEFAULT_TELEGRAM_API_ROOT } from '../../src/core/inbound.js';
import { CHANNEL_ERROR_CODES, type Channel, type ChannelHealth, type ChatTarget, type InboundHandler, type OutgoingText, type SentMessage } from '../channel.js';
import { downloadTelegramFile } from './files.js';
import { handleButtonPress } from './buttons.js';
import { sendTelegramText, sendTelegramTyping, toTelegramChannelError } from './send.js';
import { clearTelegramDraft, deleteTelegramMessage, editTelegramText, sendTelegramDraft } from './live-reply.js';
import { createFailureTracker, type FailureTracker, type SetAsideUpdate } from './set-aside.js';
import { createPollHealth, type PollHealth } from './poll-health.js';
import { toInboundMessage, type GroupTrigger, type TelegramBotIdentity } from './translate.js';

export type { SetAsideUpdate };

/** The chat commands registered with setMyCommands by default: the gateway's command menu. */
export const DEFAULT_TELEGRAM_COMMANDS: readonly BotCommand[] = COMMAND_MENU.map(({ command, description }) => ({ command, description }));

/** Options of {@link createTelegramChannel}. */
export interface TelegramChannelOptions {
  /** Bot token from @BotFather. Required. */
  token: string;
  /** Bot API root. Default {@link DEFAULT_TELEGRAM_API_ROOT} (tests point it at a fake). */
  apiRoot?: string;
  /** Public HTTPS URL of the webhook; when set the channel runs in webhook mode. Default: polling. */
  webhookUrl?: string;
  /** Secret checked in `X-Telegram-Bot-Api-Secret-Token`. Required with `webhookUrl`. */
  webhookSecret?: string;
  /** When the bot answers in groups. Default `mention`. */
  groupTrigger?: GroupTrigger;
  /** Long-poll timeout of getUpdates, in seconds. Default 30. */
  pollTimeoutSeconds?: number;
  /** Wait before fetching again after an update could not be handled, in ms. Default 1000. */
  redeliveryDelayMs?: number;
  /** Commands registered with setMyCommands on start. Default {@link DEFAULT_TELEGRAM_COMMANDS}. */
  commands?: readonly BotCommand[];
  /** Renewal period of the typing indicator, in ms. Default 4000 (it fades after 5 s). */
  typingIntervalMs?: number;
  /** Tries of one update before it is set aside and the bot goes on. Default 3. */
  maxUpdateAttempts?: number;
  /** Largest photo size reported for a photo (Telegram sends several sizes), bytes. Default 10 MB. */
  maxAttachmentBytes?: number;
  /**
   * Longest wait between getUpdates calls that keep failing, ms: the wait starts at
   * `redeliveryDelayMs` and doubles per failure up to this (a platform's retry-after wins). Polling
   * never gives up by itself, a refused token included. Default 30 000.
   */
  maxPollBackoffMs?: number;
  /** getUpdates failures in a row after which `health()` says down (a refused token: at once). Default 2. */
  downAfterFailures?: number;
}

/** What the Telegram channel needs from its host. */
export interface TelegramChannelDeps {
  log?: Logger;
  /**
   * Keeps an update that kept failing (e.g. a dead-letter list in Redis); the bot moves past it
   * once this resolves, and tries the update again when it rejects (nothing is lost while Redis
   * is down). Default: logged at error and skipped.
   */
  setAside?: (update: SetAsideUpdate) => Promise<void>;
  /**
   * How long this process may still poll, ms, asked before each getUpdates (the channel lease of
   * several gateways): each long poll is shortened to end half a second inside it, and none starts
   * while less than that is left (the poller waits). Default: no limit.
   */
  pollWindowMs?: () => number;
}

/** Resolved {@link TelegramChannelOptions}. */
export type ResolvedTelegramChannelOptions = Required<Omit<TelegramChannelOptions, 'webhookUrl' | 'webhookSecret'>> & Pick<TelegramChannelOptions, 'webhookUrl' | 'webhookSecret'>;

/** The Telegram channel; in webhook mode mount {@link TelegramChannel.webhookHandler} at the webhook URL's path. */
export interface TelegramChannel extends Channel {
  readonly name: 'telegram';
  readonly mode: 'polling' | 'webhook';
  /** The bot's identity, known after `start`. */
  readonly identity: TelegramBotIdentity | undefined;
  /** Polling: down after `downAfterFailures` failed getUpdates in a row (a refused token: at once) or one hanging; webhook mode: up. */
  health(): ChannelHealth;
  /** A hono handler for webhook POSTs (checks the secret-token header; 500 when not handled; 404 in polling mode). */
  webhookHandler(): (c: HonoContext) => Promise<Response>;
}

/** A long poll ends this long before the poll window does, ms (the round trip). */
const POLL_WINDOW_SLACK_MS = 500;
/** How long the poller waits when the poll window is too short for a call, ms. */
const POLL_WINDOW_WAIT_MS = 200;

const DEFAULTS = {
  apiRoot: DEFAULT_TELEGRAM_API_ROOT,
  groupTrigger: 'mention',
  pollTimeoutSeconds: 30,
  redeliveryDelayMs: 1_000,
  commands: DEFAULT_TELEGRAM_COMMANDS,
  typingIntervalMs: 4_000,
  maxUpdateAttempts: 3,
  maxAttachmentBytes: 10 * 1024 * 1024,
  maxPollBackoffMs: 30_000,
  downAfterFailures: 2,
} satisfies Omit<ResolvedTelegramChannelOptions, 'token'>;

/** Creates the Telegram channel. `@throws` ChannelError (`CHANNEL_PERMANENT`) on invalid options. */
export function createTelegramChannel(deps: TelegramChannelDeps = {}, options: TelegramChannelOptions): TelegramChannel {
  const resolved: ResolvedTelegramChannelOptions = { ...DEFAULTS, ...options };
  validate(resolved);
  const log = (deps.log ?? createSilentLogger()).child({ component: 'channel', channel: 'telegram' });
  const bot = new Bot(resolved.token, { client: { apiRoot: resolved.apiRoot } });
  // No retries inside a Bot API call: a failed send surfaces at once as a classified ChannelError and
  // the outbound job is the one retry layer (a rate-limited reply waits as a delayed job, not here).
  const state: ChannelState = {};
  const failures = createFailureTracker({ setAside: deps.setAside, tell: (message) => state.onMessage?.(message) ?? Promise.resolve(), log }, resolved.maxUpdateAttempts);
  bot.on('message', (ctx) => handleMessage(ctx, state, resolved, log));
  bot.on('callback_query', (ctx) => handleButtonPress(ctx, state.onMessage, log));
  const mode = resolved.webhookUrl ? 'webhook' : 'polling';
  // Webhook mode receives through the gateway's HTTP server: nothing of its own can fail.
  const pollHealth = createPollHealth({ downAfterFailures: resolved.downAfterFailures });

  return {
    name: 'telegram',
    maxMessageLength: 4096,
    lengthUnit: 'utf16',
    formatting: 'telegram-html',
    typingIntervalMs: resolved.typingIntervalMs,
    mode,
    get identity() {
      return state.identity;
    },
    async start(onMessage) {
      state.onMessage = onMessage;
      await startBot(bot, mode, resolved, state, { log, failures, pollWindowMs: deps.pollWindowMs, health: pollHealth });
    },
    async stop() {
      const poller = state.poller;
      state.poller = undefined;
      state.onMessage = undefined;
      if (poller) await poller.stop();
    },
    health: () => pollHealth.health(),
    async send(target: ChatTarget, message: OutgoingText): Promise<SentMessage> {
      return sendTelegramText(bot.api, target, message);
    },
    async sendTyping(target: ChatTarget): Promise<void> {
      await sendTelegramTyping(bot.api, target);
    },
    downloadAttachment: (attachment, download) => downloadTelegramFile(bot.api, resolved.apiRoot, resolved.token, attachment, download),
    sendDraft: (target, draft) => sendTelegramDraft(bot.api, target, draft),
    clearDraft: (target, liveReplyId) => clearTelegramDraft(bot.api, target, liveReplyId),
    editMessage: (target, messageId, message) => editTelegramText(bot.api, target, messageId, message),
    // An edit without `reply_markup` takes the inline keyboard away.
    closeChoices: (target, messageId, message) => editTelegramText(bot.api, target, messageId, message),
    deleteMessage: (target, messageId) => deleteTelegramMessage(bot.api, target, messageId),
    webhookHandler() {
      return createWebhookHandler(bot, mode, resolved, { log, failures, health: pollHealth });
    },
  };
}

type ChannelState = { onMessage?: InboundHandler; identity?: TelegramBotIdentity; poller?: Poller };

/** getMe, setMyCommands, then setWebhook (webhook mode) or deleteWebhook and polling. `@throws` ChannelError. */
async function startBot(bot: Bot, mode: TelegramChannel['mode'], options: ResolvedTelegramChannelOptions, state: ChannelState, deps: PollDeps): Promise<void> {
  const log = deps.log;
  try {
    await bot.init();
    state.identity = { id: bot.botInfo.id, username: bot.botInfo.username };
    await registerCommands(bot, options.commands, log);
    if (mode === 'webhook') {
      await bot.api.setWebhook(options.webhookUrl!, { secret_token: options.webhookSecret, allowed_updates: ['message', 'callback_query'] });
    } else {
      await bot.api.deleteWebhook();
      state.poller = startPolling(bot, options, deps);
    }
  } catch (err) {
    throw toTelegramChannelError(err, 'start');
  }
  log.info({ mode, username: state.identity.username }, 'telegram channel started');
}

/**
 * Registers the command menu (the "/" list in Telegram's clients), best effort: a bot that cannot
 * set it still answers every command typed, so a refusal is a warning, not a failed start.
 */
async function registerCommands(bot: Bot, commands: readonly BotCommand[], log: Logger): Promise<void> {
  try {
    await bot.api.setMyCommands([...commands]);
  } catch (err) {
    log.warn({ err: toTelegramChannelError(err, 'setMyCommands') }, 'command menu not registered with setMyCommands; commands still work when typed');
  }
}

/**
 * The webhook endpoint: 401 on a wrong secret, 500 when the update was not handled (200 once it
 * was set aside after `maxUpdateAttempts`), 404 in polling mode.
 */
function createWebhookHandler(bot: Bot, mode: TelegramChannel['mode'], options: ResolvedTelegramChannelOptions, deps: PollDeps): (c: HonoContext) => Promise<Response> {
  if (mode !== 'webhook') return async (c) => c.json({ ok: false, error: 'telegram runs in polling mode' }, 404);
  const callback = webhookCallback(bot, 'hono', { secretToken: options.webhookSecret, onTimeout: 'throw', timeoutMilliseconds: 55_000 });
  return async (c) => {
    try {
      return await callback(c);
    } catch (err) {
      const update = (await c.req.json().catch(() => undefined)) as Update | undefined;
      if (update && typeof update.update_id === 'number' && (await deps.failures.failed(update, err))) return c.json({ ok: true });
      deps.log.warn({ err: toTelegramChannelError(err, 'webhook') }, 'webhook update not handled; Telegram will retry');
      return c.json({ ok: false }, 500);
    }
  };
}

/** grammY types its signal with the `abort-controller` polyfill; Node's native one is compatible. */
type GrammySignal = Parameters<Bot['api']['getUpdates']>[1];

interface Poller {
  stop(): Promise<void>;
}

interface PollDeps {
  log: Logger;
  failures: FailureTracker;
  pollWindowMs?: () => number;
  health: PollHealth;
}

/** Runs `message` updates through translate → onMessage (media the bot cannot read included). */
async function handleMessage(ctx: GrammyContext, state: ChannelState, options: ResolvedTelegramChannelOptions, log: Logger): Promise<void> {
  const message = ctx.message;
  if (!message || !state.identity) return;
  const translated = toInboundMessage(message, state.identity, { groupTrigger: options.groupTrigger, receivedAt: Date.now(), maxPhotoBytes: options.maxAttachmentBytes, updateId: ctx.update.update_id });
  if (translated.kind === 'ignore') {
    log.debug({ chatId: message.chat.id, reason: translated.reason }, 'update ignored');
    return;
  }
  // Media the bot cannot read goes to the gateway too: its answer is queued like every reply, never sent from here.
  const onMessage = state.onMessage;
  if (!onMessage) throw new ChannelError('telegram update arrived while the channel is stopped', { retryable: true, code: CHANNEL_ERROR_CODES.notStarted });
  await onMessage(translated.message);
}

/**
 * Long polling that confirms an update only after it was handled: on a failure the offset stays
 * at the failed update, which getUpdates returns again after `redeliveryDelayMs`.
 */
function startPolling(bot: Bot, options: ResolvedTelegramChannelOptions, deps: PollDeps): Poller {
  const log = deps.log;
  const abort = new AbortController();
  let offset = 0;
  let failuresInRow = 0;
  const wait = (ms: number): Promise<void> => new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    abort.signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });
  const loop = async (): Promise<void> => {
    while (!abort.signal.aborted) {
      let updates: Update[];
      const timeout = pollTimeout(options.pollTimeoutSeconds, deps.pollWindowMs);
      if (timeout === undefined) {
        await wait(POLL_WINDOW_WAIT_MS);
        continue;
      }
      try {
        deps.health.started(timeout);
        updates = await bot.api.getUpdates({ offset, timeout, allowed_updates: ['message', 'callback_query'] }, abort.signal as GrammySignal);
        deps.health.succeeded();
        failuresInRow = 0;
      } catch (err) {
        if (abort.signal.aborted) return;
        const error = toTelegramChannelError(err, 'getUpdates');
        deps.health.failed(error);
        failuresInRow += 1;
        log.error({ err: error, failuresInRow }, 'polling failed; trying again');
        // Also a refused token: the gateway stays up and says so (status, /readyz) until it is fixed.
        await wait(error.retryAfterMs ?? backoffDelayMs(failuresInRow, { baseDelayMs: options.redeliveryDelayMs, maxDelayMs: options.maxPollBackoffMs }));
        continue;
      }
      offset = await handleBatch(bot, updates, offset, deps.failures);
      const last = updates.at(-1);
      if (last !== undefined && offset <= last.update_id) await wait(options.redeliveryDelayMs);
    }
  };
  const running = loop().catch((err: unknown) => log.error({ err }, 'polling stopped'));
  return {
    async stop() {
      abort.abort();
      await running;
      // Confirm what was handled, as grammY's bot.stop() does (unless another poller may run by now).
      if (pollTimeout(0, deps.pollWindowMs) !== undefined) await bot.api.getUpdates({ offset, limit: 1, timeout: 0 }).catch(() => undefined);
    },
  };
}

/**
 * The long poll's timeout, s: `seconds`, shortened to end `POLL_WINDOW_SLACK_MS` inside the poll
 * window; undefined when no call may start now.
 */
function pollTimeout(seconds: number, windowMs: (() => number) | undefined): number | undefined {
  if (!windowMs) return seconds;
  const allowed = Math.floor((windowMs() - POLL_WINDOW_SLACK_MS) / 1000);
  return allowed < Math.min(1, seconds) ? undefined : Math.min(seconds, allowed);
}

/** Handles updates in order; returns the new offset (stops at the first failure not yet set aside). */
async function handleBatch(bot: Bot, updates: Update[], offset: number, failures: FailureTracker): Promise<number> {
  for (const update of updates) {
    try {
      await bot.handleUpdate(update);
      failures.handled(update.update_id);
    } catch (err) {
      if (!(await failures.failed(update, err))) return update.update_id;
    }
    offset = update.update_id + 1;
  }
  return offset;
}

function validate(options: ResolvedTelegramChannelOptions): void {
  const issues: string[] = [];
  if (!/^\d+:[\w-]+$/.test(options.token)) issues.push('`token` must look like `<bot id>:<secret>` (from @BotFather)');
  if (options.webhookUrl !== undefined && !options.webhookSecret) issues.push('`webhookSecret` is required with `webhookUrl`');
  if (options.webhookSecret !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(options.webhookSecret)) issues.push('`webhookSecret` must be 1–256 characters of A-Z, a-z, 0-9, _ and -');
  if (!(options.pollTimeoutSeconds >= 0)) issues.push(`\`pollTimeoutSeconds\` must be ≥ 0 (got ${options.pollTimeoutSeconds})`);
  if (!(Number.isInteger(options.maxUpdateAttempts) && options.maxUpdateAttempts >= 1)) issues.push(`\`maxUpdateAttempts\` must be an integer ≥ 1 (got ${options.maxUpdateAttempts})`);
  if (!(Number.isInteger(options.downAfterFailures) && options.downAfterFailures >= 1)) issues.push(`\`downAfterFailures\` must be an integer ≥ 1 (got ${options.downAfterFailures})`);
  if (!(options.maxPollBackoffMs >= options.redeliveryDelayMs)) issues.push(`\`maxPollBackoffMs\` must be ≥ \`redeliveryDelayMs\` (got ${options.maxPollBackoffMs})`);
  if (!(options.typingIntervalMs > 0)) issues.push(`\`typingIntervalMs\` must be > 0 (got ${options.typingIntervalMs})`);
  if (!(Number.isInteger(options.maxAttachmentBytes) && options.maxAttachmentBytes >= 1)) issues.push(`\`maxAttachmentBytes\` must be an integer ≥ 1 (got ${options.maxAttachmentBytes})`);
  if (issues.length > 0) throw new ChannelError(`invalid telegram options: ${issues.join('; ')}`, { retryable: false, code: CHANNEL_ERROR_CODES.permanent });
}
