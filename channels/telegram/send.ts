/**
 * Telegram sends (sendMessage, sendChatAction) and the one conversion of grammY errors into
 * ChannelError. Error messages never contain the bot token (it is part of every API URL).
 */
import { GrammyError, HttpError, type Api } from 'grammy';
import { secondsToMs } from '../../src/core/retry.js';
import type { ChannelError } from '../../src/errors.js';
import { toPlatformChannelError, type ChatTarget, type PlatformFailure, type OutgoingText, type SentMessage } from '../channel.js';


/** Sends one chunk: HTML parse mode when `formatted`, literal text when `plain`. `@throws` ChannelError. */
export async function sendTelegramText(api: Api, target: ChatTarget, message: OutgoingText): Promise<SentMessage> {
  try {
    const sent = await api.sendMessage(target.chatId, message.text, {
      ...(message.mode === 'formatted' ? { parse_mode: 'HTML' as const } : {}),
      ...(target.threadId !== undefined ? { message_thread_id: Number(target.threadId) } : {}),
      ...(target.replyTo !== undefined ? { reply_parameters: { message_id: Number(target.replyTo), allow_sending_without_reply: true } } : {}),
      link_preview_options: { is_disabled: true },
      ...(message.choices && message.choices.length > 0 ? { reply_markup: { inline_keyboard: [message.choices.map((choice) => ({ text: choice.label, callback_data: choice.command }))] } } : {}),
    });
    return { messageId: String(sent.message_id) };
  } catch (err) {
    throw toTelegramChannelError(err, 'sendMessage', target.chatId);
  }
}

/** Shows "typing…" in the chat (or topic). `@throws` ChannelError. */
export async function sendTelegramTyping(api: Api, target: ChatTarget): Promise<void> {
  try {
    await api.sendChatAction(target.chatId, 'typing', target.threadId !== undefined ? { message_thread_id: Number(target.threadId) } : {});
  } catch (err) {
    throw toTelegramChannelError(err, 'sendChatAction', target.chatId);
  }
}

/**
 * Converts a grammY error (or anything thrown by a Bot API call) into a ChannelError, classified
 * by the shared retry policy. The message names the method, the chat and Telegram's answer —
 * never the request URL.
 */
export function toTelegramChannelError(err: unknown, method: string, chatId?: string): ChannelError {
  return toPlatformChannelError(err, method, chatId === undefined ? undefined : `telegram:${chatId}`, describeTelegramError);
}

function describeTelegramError(err: unknown): PlatformFailure {
  if (err instanceof GrammyError) {
    return { failure: { status: err.error_code, description: err.description, retryAfterMs: secondsToMs(err.parameters.retry_after) }, detail: `${err.error_code}: ${err.description}` };
  }
  // Network errors carry the request URL, which contains the token: keep only a scrubbed copy.
  const cause = scrubbedError(err);
  return err instanceof HttpError ? { failure: { network: true }, detail: 'network error', cause } : { failure: {}, detail: 'unexpected error', cause };
}

/** Replaces bot tokens (`<digits>:<secret>`) in `text` with `[Redacted]`. */
export function redactBotToken(text: string): string {
  return text.replace(/\d{5,}:[A-Za-z0-9_-]{20,}/g, '[Redacted]');
}

function scrubbedError(err: unknown): Error {
  const inner = err instanceof HttpError ? err.error : err;
  const message = inner instanceof Error ? inner.message : String(inner);
  const scrubbed = new Error(redactBotToken(message));
  scrubbed.name = inner instanceof Error ? inner.name : 'Error';
  return scrubbed;
}
