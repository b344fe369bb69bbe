/**
 * Telegram's partial replies: `sendMessageDraft` in private chats (an animated preview Telegram
 * shows for about 30 s; the final reply is sent with sendMessage as usual and takes its place),
 * and `editMessageText`/`deleteMessage` for the message edited in place in groups. Errors are
 * converted like every Telegram call's (`toTelegramChannelError`); "message is not modified" is
 * success, so a repeated edit is idempotent.
 */
import { GrammyError, type Api } from 'grammy';
import { tailStart } from '../../src/core/text.js';
import type { ChatTarget, DraftUpdate, OutgoingText, LiveReplyChat } from '../channel.js';
import { toTelegramChannelError } from './send.js';

const MAX_DRAFT = 4096;
const CUT_MARK = '… ';

/** Shows `draft` as the chat's message draft; false (nothing sent) outside private chats. `@throws` ChannelError. */
export async function sendTelegramDraft(api: Api, target: LiveReplyChat, draft: DraftUpdate): Promise<boolean> {
  if (target.chatType !== 'private') return false;
  await callDraft(api, target, draft.liveReplyId, draftText(draft.text));
  return true;
}

/** A draft that was no reply: replaced by Telegram's "Thinking…" placeholder (empty text), which fades by itself. */
export async function clearTelegramDraft(api: Api, target: LiveReplyChat, liveReplyId: string): Promise<void> {
  if (target.chatType !== 'private') return;
  await callDraft(api, target, liveReplyId, '');
}

/** Replaces a message's text (HTML when `formatted`); an unchanged text is success. `@throws` ChannelError. */
export async function editTelegramText(api: Api, target: ChatTarget, messageId: string, message: OutgoingText): Promise<void> {
  try {
    await api.editMessageText(target.chatId, Number(messageId), message.text, {
      ...(message.mode === 'formatted' ? { parse_mode: 'HTML' as const } : {}),
      link_preview_options: { is_disabled: true },
    });
  } catch (err) {
    if (isNotModified(err)) return;
    throw toTelegramChannelError(err, 'editMessageText', target.chatId);
  }
}

/** Deletes a message the bot sent; one already gone is success. `@throws` ChannelError. */
export async function deleteTelegramMessage(api: Api, target: ChatTarget, messageId: string): Promise<void> {
  try {
    await api.deleteMessage(target.chatId, Number(messageId));
  } catch (err) {
    if (err instanceof GrammyError && err.error_code === 400 && /message to delete not found/i.test(err.description)) return;
    throw toTelegramChannelError(err, 'deleteMessage', target.chatId);
  }
}

/** A stable non-zero 31-bit draft id per stream: Telegram animates changes of one draft. */
export function telegramDraftId(liveReplyId: string): number {
  let hash = 0;
  for (let i = 0; i < liveReplyId.length; i++) hash = (Math.imul(hash, 31) + liveReplyId.charCodeAt(i)) | 0;
  return (hash & 0x7fffffff) || 1;
}

async function callDraft(api: Api, target: LiveReplyChat, liveReplyId: string, text: string): Promise<void> {
  try {
    await api.sendMessageDraft(Number(target.chatId), telegramDraftId(liveReplyId), text, target.threadId !== undefined ? { message_thread_id: Number(target.threadId) } : {});
  } catch (err) {
    throw toTelegramChannelError(err, 'sendMessageDraft', target.chatId);
  }
}

/** The draft's text within Telegram's limit: its latest part after `…` when longer. */
function draftText(text: string): string {
  if (text.length <= MAX_DRAFT) return text;
  return CUT_MARK + text.slice(tailStart(text, MAX_DRAFT - CUT_MARK.length));
}

function isNotModified(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /message is not modified/i.test(err.description);
}
