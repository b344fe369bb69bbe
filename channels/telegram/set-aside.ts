/**
 * Updates that keep failing (malformed, or their handling throws): counted per update id, and set
 * aside after a few tries so one bad update never stalls the bot for every chat.
 */
import type { Update } from 'grammy/types';
import type { Logger } from '../../src/log.js';
import { redactBotToken } from './send.js';

/** An update that kept failing, as handed to {@link TelegramChannelDeps.setAside}. */
export interface SetAsideUpdate {
  channel: 'telegram';
  updateId: number;
  /** The update as Telegram sent it, JSON. */
  raw: string;
  /** The last failure (message only, never the bot token). */
  error: string;
  attempts: number;
  /** ms since epoch. */
  atMs: number;
}

/** Counts the tries of failing updates; sets one aside once it failed `maxAttempts` times. */
export interface FailureTracker {
  /** Records a failure. @returns true when the update was set aside (move past it), false to try it again. */
  failed(update: Update, err: unknown): Promise<boolean>;
  /** The update was handled (or passed): forget its count. */
  handled(updateId: number): void;
}

/** Creates the tracker; `setAside` keeps an update that failed `maxAttempts` times (absent: logged and skipped). */
export function createFailureTracker(setAside: ((update: SetAsideUpdate) => Promise<void>) | undefined, maxAttempts: number, log: Logger): FailureTracker {
  const attempts = new Map<number, number>();
  return {
    async failed(update, err) {
      const cause = err instanceof Error && 'error' in err ? (err as { error: unknown }).error : err;
      const count = (attempts.get(update.update_id) ?? 0) + 1;
      attempts.set(update.update_id, count);
      if (count < maxAttempts) {
        log.warn({ err: cause, updateId: update.update_id, attempt: count }, 'update not handled; Telegram will re-deliver it');
        return false;
      }
      const error = redactBotToken(cause instanceof Error ? cause.message : String(cause));
      const entry: SetAsideUpdate = { channel: 'telegram', updateId: update.update_id, raw: JSON.stringify(update), error, attempts: count, atMs: Date.now() };
      try {
        if (setAside) await setAside(entry);
      } catch (setAsideErr) {
        log.error({ err: setAsideErr, updateId: update.update_id, attempts: count }, 'update keeps failing and could not be set aside; trying it again');
        return false;
      }
      attempts.delete(update.update_id);
      log.error({ err: cause, updateId: update.update_id, attempts: count, kept: setAside !== undefined }, 'update set aside after repeated failures; polling goes on');
      log.debug({ updateId: update.update_id, raw: entry.raw }, 'update set aside');
      return true;
    },
    handled(updateId) {
      attempts.delete(updateId);
    },
  };
}
