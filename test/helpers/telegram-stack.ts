import { createTelegramChannel, type TelegramChannelDeps, type TelegramChannelOptions } from '../../channels/telegram/index.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { useFakeServer } from './fake-fixture.js';
import { startStack, type Stack, type StackOptions } from './stack.js';
import { waitUntil } from './waits.js';

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

/** A fake Telegram for each test of a file and the stack started against it, both closed after the test. */
export interface TelegramFixture {
  /** The running test's fake Telegram (a new one for each test). */
  readonly telegram: FakeTelegramServer;
  /** The running test's stack, once {@link TelegramFixture.start} ran. */
  readonly stack: Stack | undefined;
  /** Starts the test's stack against its fake Telegram ({@link startTelegramStack}). */
  start(options: TelegramStackOptions): Promise<Stack>;
  /** The text of every `sendMessage` the bot made so far, in order. */
  sent(): string[];
  /** Resolves once `condition` holds, checked on every Telegram call. */
  until(condition: () => boolean): Promise<void>;
  /** Calls `send` and resolves with the next message the bot sends. */
  next(send: () => void): Promise<string>;
}

/**
 * Registers the fixture's `beforeEach` (a new fake Telegram) and `afterEach` (close the stack, then
 * the fake) in the calling file or `describe`, and returns the fixture.
 */
export function useTelegramFixture(): TelegramFixture {
  let stack: Stack | undefined;
  const fake = useFakeServer(() => startFakeTelegram(), async () => {
    await stack?.close();
    stack = undefined;
  });
  const sent = (): string[] => fake().callsOf('sendMessage').map((call) => String(call.params.text));
  const until = (condition: () => boolean): Promise<void> => waitUntil(fake(), 'call', condition);
  return {
    get telegram() { return fake(); },
    get stack() { return stack; },
    async start(options) {
      stack = await startTelegramStack(fake(), options);
      return stack;
    },
    sent,
    until,
    async next(send) {
      const before = sent().length;
      send();
      await until(() => sent().length > before);
      return sent()[before]!;
    },
  };
}
