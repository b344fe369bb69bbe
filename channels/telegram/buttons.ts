/**
 * A press of an inline keyboard button (`callback_query`): the button's command goes to the gateway
 * as a message of the user who pressed it, and its answer is shown where it was pressed: the
 * callback answered (a toast; an alert when it settled nothing). The question itself is edited to
 * show the decision, its buttons removed, by the decision (src/gateway/show-decision.ts), as it is
 * after a typed command, the expiry or `/stop`.
 */
import type { Context as GrammyContext } from 'grammy';
import type { InboundMessage } from '../../src/core/inbound.js';
import { truncateText } from '../../src/core/text.js';
import type { Logger } from '../../src/log.js';
import type { InboundHandler } from '../channel.js';

/** Telegram's limit of a callback answer's text, characters. */
const CALLBACK_TEXT_MAX = 200;

/** Handles one button press; throws (the update is re-delivered) only when the gateway did not take it. */
export async function handleButtonPress(ctx: GrammyContext, onMessage: InboundHandler | undefined, log: Logger): Promise<void> {
  const query = ctx.callbackQuery;
  if (!query || !onMessage) return;
  const chat = query.message?.chat;
  if (!query.data || !chat || !query.message) {
    await ctx.answerCallbackQuery().catch(() => undefined);
    return;
  }
  const message: InboundMessage = {
    id: `telegram:cb:${query.id}`, channel: 'telegram', chatId: String(chat.id), userId: String(query.from.id),
    userName: query.from.first_name || query.from.username || String(query.from.id), text: query.data, attachments: [],
    chatType: chat.type === 'private' ? 'private' : 'group', receivedAt: Date.now(), answerInPlace: true, refusalsAnswered: true,
    ...('message_thread_id' in query.message && query.message.message_thread_id !== undefined && 'is_topic_message' in query.message && query.message.is_topic_message ? { threadId: String(query.message.message_thread_id) } : {}),
  };
  const verdict = await onMessage(message);
  const answer = verdict?.answer?.text ?? verdict?.reason ?? 'Done.';
  const settled = verdict?.answer?.settled === true;
  // A press answered before (a re-delivery) or too late: Telegram refuses the answer; nothing to do.
  await ctx.answerCallbackQuery({ text: truncateText(answer, CALLBACK_TEXT_MAX), show_alert: !settled }).catch((err: unknown) => log.debug({ err }, 'callback query not answered'));
}
