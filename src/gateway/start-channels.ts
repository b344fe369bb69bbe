import type { Channel, InboundHandler } from '../../channels/channel.js';
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import type { ChannelName } from '../core/inbound.js';
import { ChannelError, GatewayError } from '../errors.js';

/** What to check when a channel does not connect, by channel. */
export const ADVICE: Readonly<Record<ChannelName, string>> = {
  telegram: 'check the route to the Bot API (a proxy or firewall), TELEGRAM_API_ROOT and TELEGRAM_BOT_TOKEN; `chatgate doctor` checks them',
  discord: 'check the route to discord.com (a proxy or firewall) and DISCORD_BOT_TOKEN; `chatgate doctor` checks it',
  web: 'the web chat needs nothing remote; see the log for the cause',
  api: 'the OpenAI-compatible API needs nothing remote; see the log for the cause',
};

/** What to do when a platform rejects the bot token, by channel. */
export const TOKEN_ADVICE: Readonly<Record<string, string>> = {
  telegram: 'TELEGRAM_BOT_TOKEN was rejected (401 Unauthorized): copy the token again from @BotFather (/mybots → API Token); with a local Bot API server, check TELEGRAM_API_ROOT',
  discord: 'DISCORD_BOT_TOKEN was rejected (invalid token): reset it in the Discord developer portal (Bot → Reset Token), set it again and restart the gateway',
};

/** Where the channels stand, for `/readyz`: `ok` once every channel runs. */
export interface ChannelsStatus {
  state: string;
  /** The channels connected so far, in start order. */
  connected?: ChannelName[];
}

/** Options of {@link startChannels}. */
export interface StartChannelsOptions {
  /** How long each channel may take to connect, ms. */
  timeoutMs: number;
  /** Ends the start early (a stop signal): rejects with `START_ABORTED`. */
  signal?: AbortSignal;
  /** Told before each channel connects. */
  onProgress?: (text: string) => void;
  /** Receives each channel's `stop` before it starts, so a half-started channel is stopped too. */
  onStarting: (stop: () => Promise<void>) => void;
}

/**
 * Starts `channels` one after another, each bounded by `timeoutMs`, and keeps `status` up to date.
 * @throws ChannelError `CHANNEL_NOT_STARTED` naming the channel that did not connect in time, with
 * what to check; GatewayError `START_ABORTED` when `signal` fires first; the channel's own error.
 */
export async function startChannels(channels: readonly Channel[], handle: InboundHandler, status: ChannelsStatus, options: StartChannelsOptions): Promise<void> {
  for (const channel of channels) {
    status.state = `connecting the ${channel.name} channel`;
    options.onProgress?.(`${status.state}…`);
    options.onStarting(() => channel.stop());
    await bounded(channel.start(handle), channel.name, options).catch((err: unknown) => { throw explainStartFailure(channel.name, err); });
    (status.connected ??= []).push(channel.name);
  }
  status.state = 'ok';
}

/**
 * A channel's start failure as one line saying which channel, what failed and what to do: a
 * rejected bot token names its variable and where to get a new one.
 */
export function explainStartFailure(name: ChannelName, err: unknown): unknown {
  if (!(err instanceof ChannelError) || err.code === CHANNEL_ERROR_CODES.notStarted) return err;
  const cause = err.cause as { error_code?: unknown; code?: unknown; status?: unknown } | undefined;
  const rejected = name === 'telegram' ? cause?.error_code === 401 || cause?.error_code === 404 : cause?.code === 'TokenInvalid' || cause?.status === 401;
  if (rejected) {
    const message = `the ${name} channel could not connect: ${TOKEN_ADVICE[name]}`;
    return new ChannelError(message, { retryable: false, code: CHANNEL_ERROR_CODES.permanent, cause: err });
  }
  return new ChannelError(`the ${name} channel could not connect (${err.message}): ${ADVICE[name]}`, { retryable: err.retryable, code: err.code, cause: err });
}

async function bounded(start: Promise<void>, name: ChannelName, options: StartChannelsOptions): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const limit = new Promise<never>((_resolve, reject) => {
    const seconds = Math.round(options.timeoutMs / 100) / 10;
    timer = setTimeout(() => reject(new ChannelError(`the ${name} channel did not connect within ${seconds} s: ${ADVICE[name]}`, { retryable: false, code: CHANNEL_ERROR_CODES.notStarted })), options.timeoutMs);
    onAbort = () => reject(new GatewayError('START_ABORTED', `the start was interrupted while connecting the ${name} channel`));
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
  });
  start.catch(() => undefined); // a start abandoned for the timeout may still fail later
  try {
    await Promise.race([start, limit]);
  } finally {
    clearTimeout(timer);
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
  }
}
