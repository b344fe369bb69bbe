/**
 * The bot token's standing on Discord's REST API. A 401 means the token was revoked or reset: after
 * one, discord.js drops the token and every later call fails locally ("Expected token to be set").
 * That is permanent: the channel reports it in its health (`tokenRejected`) and logs it once; the
 * sends fail for good (see `toDiscordChannelError`), so the replies go to the failed set at once.
 */
import { DiscordAPIError } from 'discord.js';
import type { Logger } from '../../src/log.js';
import type { ChannelHealth } from '../channel.js';

/** What discord.js throws for a call made after it dropped a refused token. */
const TOKEN_DROPPED_RE = /^Expected token to be set/;

/** Watches the outcomes of REST calls for a refused token (see the module comment). */
export interface TokenWatch {
  /** Runs `call`; a token refusal it throws is recorded (and logged the first time) before it is rethrown. */
  guard<T>(call: () => Promise<T>): Promise<T>;
  /** Down with `tokenRejected` once a call was refused; undefined before. */
  health(): ChannelHealth | undefined;
}

/** Whether `err` (a ChannelError's cause, or a discord.js error) says Discord refused the bot token. */
export function isTokenRefusal(err: unknown): boolean {
  const cause = err instanceof Error && err.cause !== undefined ? err.cause : err;
  if (cause instanceof DiscordAPIError) return cause.status === 401;
  return cause instanceof Error && TOKEN_DROPPED_RE.test(cause.message);
}

/** Creates the watch of one channel instance. `now`: ms since epoch. */
export function createTokenWatch(log: Logger, now: () => number = Date.now): TokenWatch {
  let refusedSinceMs: number | undefined;
  return {
    async guard(call) {
      try {
        return await call();
      } catch (err) {
        if (refusedSinceMs === undefined && isTokenRefusal(err)) {
          refusedSinceMs = now();
          log.error({ err }, 'discord refused the bot token (401): nothing can be sent; reset the token in the developer portal and restart the gateway with the new one');
        }
        throw err;
      }
    },
    health() {
      if (refusedSinceMs === undefined) return undefined;
      return { ok: false, reason: 'Discord refused the bot token (401 Unauthorized): replies cannot be sent', sinceMs: refusedSinceMs, tokenRejected: true };
    },
  };
}
