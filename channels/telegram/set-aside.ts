/**
 * Updates that keep failing (malformed, or their handling throws): counted per update id, and set
 * aside after a few tries so one bad update never stalls the bot for every chat; its sender, when
 * the update says who, is told (through the gateway, never from here).
 */
import type { Message, Update } from 'grammy/types';
import { MAX_USER_NAME_CHARS, toWellFormedInbound, type InboundMessage } from '../../src/core/inbound.js';
import { truncateText } from '../../src/core/text.js';
import { createOutageLog, type Logger } from '../../src/log.js';
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

/** What the user whose message was set aside is told (through the gateway, like every notice). */
export const SET_ASIDE_REPLY = 'Sorry, this message could not be handled, so it was set aside for the operator. Please try again later, or say it differently.';

/** What the tracker needs: where to keep an update, and how to tell its sender (the channel's `onMessage`). */
export interface FailureTrackerDeps {
  /** Keeps an update that failed `maxAttempts` times; absent: logged and skipped. */
  setAside?: (update: SetAsideUpdate) => Promise<void>;
  /** Hands the gateway a message without text whose `unsupportedReply` tells the sender. */
  tell?: (message: InboundMessage) => Promise<unknown>;
  log: Logger;
}

/** Creates the tracker; see {@link FailureTrackerDeps}. */
export function createFailureTracker(deps: FailureTrackerDeps, maxAttempts: number): FailureTracker {
  const { setAside, log } = deps;
  // While Redis is away every update fails: one warning per 30 s.
  const outage = createOutageLog(log);
  const attempts = new Map<number, number>();
  return {
    async failed(update, err) {
      const cause = err instanceof Error && 'error' in err ? (err as { error: unknown }).error : err;
      const count = (attempts.get(update.update_id) ?? 0) + 1;
      attempts.set(update.update_id, count);
      if (count < maxAttempts) {
        outage.warn({ err: cause, updateId: update.update_id, attempt: count }, 'update not handled; Telegram will re-deliver it');
        return false;
      }
      const error = redactBotToken(cause instanceof Error ? cause.message : String(cause));
      const entry: SetAsideUpdate = { channel: 'telegram', updateId: update.update_id, raw: JSON.stringify(update), error, attempts: count, atMs: Date.now() };
      try {
        if (setAside) await setAside(entry);
      } catch (setAsideErr) {
        outage.error({ err: setAsideErr, updateId: update.update_id, attempts: count }, 'update keeps failing and could not be set aside; trying it again');
        return false;
      }
      attempts.delete(update.update_id);
      log.error({ err: cause, updateId: update.update_id, attempts: count, kept: setAside !== undefined }, 'update set aside after repeated failures; polling goes on');
      log.debug({ updateId: update.update_id, raw: entry.raw }, 'update set aside');
      await tellSender(deps, update);
      return true;
    },
    handled(updateId) {
      attempts.delete(updateId);
    },
  };
}

/** Tells the sender of a set-aside message, when the update says who and where (best effort: the update is gone either way). */
async function tellSender(deps: FailureTrackerDeps, update: Update): Promise<void> {
  const notice = noticeOf(update);
  if (!notice || !deps.tell) return;
  await deps.tell(notice).catch((err: unknown) => deps.log.warn({ err, updateId: update.update_id }, 'could not tell the sender their message was set aside'));
}

/** A message without text carrying {@link SET_ASIDE_REPLY}, read leniently from a possibly malformed update. */
function noticeOf(update: Update): InboundMessage | undefined {
  const message = update.message as Partial<Message> | undefined;
  const chatId = message?.chat?.id;
  const userId = message?.from?.id;
  if (typeof chatId !== 'number' || typeof userId !== 'number' || typeof message?.message_id !== 'number') return undefined;
  const threadId = message.is_topic_message && typeof message.message_thread_id === 'number' ? String(message.message_thread_id) : undefined;
  return toWellFormedInbound({
    id: `telegram:${chatId}:${message.message_id}:set-aside`, channel: 'telegram', chatId: String(chatId), userId: String(userId),
    userName: typeof message.from?.first_name === 'string' ? truncateText(message.from.first_name, MAX_USER_NAME_CHARS) : String(userId), text: '', attachments: [],
    platformMessageId: String(message.message_id), chatType: message.chat?.type === 'private' ? 'private' : 'group',
    receivedAt: Date.now(), unsupportedReply: SET_ASIDE_REPLY, ...(threadId === undefined ? {} : { threadId }),
  });
}
