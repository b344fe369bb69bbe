import { createTelegramChannel, type TelegramChannelDeps, type TelegramChannelOptions } from '../../channels/telegram/index.js';
import type { FakeTelegramServer } from '../fakes/telegram-server.js';
import { startStack, type Stack, type StackOptions } from './stack.js';

/** What {@link startTelegramStack} takes: the stack's options without `channels`, and the channel's. */
export interface TelegramStackOptions extends Omit<StackOptions, 'channels'> {
  /** Telegram channel options on top of a 1 s long poll and a 50 ms redelivery delay (token and API root: the fake's). */
  channel?: Partial<TelegramChannelOptions>;
  /** Telegram channel dependencies (a `setAside`, say). Default none. */
  deps?: TelegramChannelDeps;
}

/** Starts a {@link Stack} whose one channel is Telegram, polling the fake `telegram`. */
export function startTelegramStack(telegram: FakeTelegramServer, options: TelegramStackOptions): Promise<Stack> {
  const { channel: channelOptions, deps, ...stackOptions } = options;
  const channel = createTelegramChannel(deps ?? {}, { token: telegram.token, apiRoot: telegram.apiRoot, pollTimeoutSeconds: 1, redeliveryDelayMs: 50, ...channelOptions });
  return startStack({ ...stackOptions, channels: { list: [channel] } });
}
