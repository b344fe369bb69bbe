import type { Channel, ChatTarget } from '../../channels/channel.js';
import { ChannelError } from '../errors.js';
import { createSilentLogger, type Logger } from '../log.js';

/** Options of {@link createTypingIndicators}. */
export interface TypingOptions {
  /** Stop a loop nobody stopped after this long, in ms (a lost "turn ended" signal). Default 180 000. */
  maxDurationMs?: number;
}

/** Typing indicator loops, one per key (a session id). */
export interface TypingIndicators {
  /**
   * Shows "typing…" in `target` now and renews it every `channel.typingIntervalMs` until
   * {@link stop}; starting a key already running keeps the running loop.
   */
  start(key: string, channel: Channel, target: ChatTarget): void;
  /** Stops the loop of `key`, if any. */
  stop(key: string): void;
  /** Stops every loop. */
  stopAll(): void;
  /** Keys with a running loop. */
  active(): string[];
}

const DEFAULTS = { maxDurationMs: 180_000 } satisfies Required<TypingOptions>;

/** Creates the typing indicator loops of the gateway (Telegram ~4 s, Discord ~8 s, per channel). */
export function createTypingIndicators(deps: { log?: Logger } = {}, options: TypingOptions = {}): TypingIndicators {
  const resolved = { ...DEFAULTS, ...options };
  const log = (deps.log ?? createSilentLogger()).child({ component: 'typing' });
  const loops = new Map<string, () => void>();

  const stop = (key: string): void => {
    loops.get(key)?.();
    loops.delete(key);
  };

  return {
    start(key, channel, target) {
      if (loops.has(key)) return;
      const startedAt = Date.now();
      const tick = (): void => {
        if (Date.now() - startedAt > resolved.maxDurationMs) {
          stop(key);
          return;
        }
        channel.sendTyping(target).catch((err: unknown) => {
          log.debug({ err, key }, 'typing indicator failed');
          // A chat we cannot write to will not become writable in a few seconds.
          if (err instanceof ChannelError && !err.retryable) stop(key);
        });
      };
      const timer = setInterval(tick, channel.typingIntervalMs);
      timer.unref?.();
      loops.set(key, () => clearInterval(timer));
      tick();
    },
    stop,
    stopAll() {
      for (const key of [...loops.keys()]) stop(key);
    },
    active() {
      return [...loops.keys()];
    },
  };
}
