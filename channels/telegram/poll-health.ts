/**
 * The health of the Telegram long-polling loop: down after `downAfterFailures` getUpdates calls
 * failed in a row (at once when the token was refused), or while one call has been open well past
 * its long-poll timeout (a connection that hangs); up again at the first call that answers.
 */
import { GrammyError } from 'grammy';
import type { ChannelError } from '../../src/errors.js';
import type { ChannelHealth } from '../channel.js';

/** How long past its long-poll timeout an open getUpdates counts as hanging, ms. */
export const POLL_HANG_SLACK_MS = 15_000;

/** What the polling loop reports, and what the channel's `health()` reads. */
export interface PollHealth {
  /** A getUpdates call with a long-poll timeout of `timeoutSeconds` starts. */
  started(timeoutSeconds: number): void;
  /** It answered (with or without updates). */
  succeeded(): void;
  /** It failed with `error` (the converted one; its `cause` tells a refused token). */
  failed(error: ChannelError): void;
  health(): ChannelHealth;
}

/** Creates the tracker. `now` is the clock (ms since epoch), default `Date.now`. */
export function createPollHealth(options: { downAfterFailures: number; now?: () => number }): PollHealth {
  const now = options.now ?? Date.now;
  let failures = 0;
  let firstFailureAt = 0;
  let last: { reason: string; tokenRejected: boolean } | undefined;
  let open: { since: number; timeoutMs: number } | undefined;
  return {
    started(timeoutSeconds) {
      open = { since: now(), timeoutMs: timeoutSeconds * 1000 };
    },
    succeeded() {
      open = undefined;
      failures = 0;
      last = undefined;
    },
    failed(error) {
      open = undefined;
      if (failures === 0) firstFailureAt = now();
      failures += 1;
      last = { reason: error.message, tokenRejected: isTokenRefusal(error.cause) };
    },
    health() {
      if (last && (failures >= options.downAfterFailures || last.tokenRejected)) {
        const times = failures === 1 ? '' : ` (${failures} times in a row)`;
        return { ok: false, reason: `${last.reason}${times}`, sinceMs: firstFailureAt, ...(last.tokenRejected ? { tokenRejected: true } : {}) };
      }
      const hangingSince = open ? open.since + open.timeoutMs + POLL_HANG_SLACK_MS : Infinity;
      if (now() >= hangingSince) {
        return { ok: false, reason: `getUpdates has not answered for ${Math.round((now() - open!.since) / 1000)} s (its long poll lasts ${open!.timeoutMs / 1000} s)`, sinceMs: hangingSince };
      }
      return { ok: true };
    },
  };
}

/** Telegram answers 401 to a revoked token, and 404 to one that is malformed. */
function isTokenRefusal(cause: unknown): boolean {
  return cause instanceof GrammyError && (cause.error_code === 401 || cause.error_code === 404);
}
