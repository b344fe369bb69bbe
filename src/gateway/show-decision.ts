import type { Channel, ChatTarget } from '../../channels/channel.js';
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import { approvalPrompt, decisionLine, type ApprovalRecord } from '../core/approval.js';
import type { ChannelName } from '../core/inbound.js';
import { questionReplyId } from '../approvals/question-id.js';
import { ChannelError } from '../errors.js';
import type { Logger } from '../log.js';
import type { DeliveryLedger } from '../outbound/delivery-ledger.js';
import { planFor } from '../outbound/delivery.js';

/** What showing decisions needs: the gateway's channels (once started) and the delivery ledger that knows where each question went. */
export interface DecisionDisplayDeps {
  channels: () => ReadonlyMap<ChannelName, Channel>;
  ledger: DeliveryLedger;
  logger: Logger;
}

/** The text of a decided question: the question, then the decision. */
export function decidedQuestionText(record: ApprovalRecord): string {
  return `${approvalPrompt(record)}\n\n${decisionLine(record)}`;
}

/**
 * The one way a decided question shows its decision, on every channel and whoever decided (a press,
 * a typed command, the expiry, `/stop`): the message that carries its buttons gets the decided text
 * and loses the buttons (`Channel.closeChoices`). The message is found in the delivery ledger, or
 * asked of a channel that is its own ledger (the web chat over Redis). A question not delivered
 * (yet), gone from the ledger, or on a channel without buttons is left alone.
 */
export function createDecisionDisplay(deps: DecisionDisplayDeps): (record: ApprovalRecord) => Promise<void> {
  const log = deps.logger.child({ component: 'approval-display' });
  return async (record) => {
    const channel = deps.channels().get(record.route.channel);
    if (!channel?.closeChoices) return;
    const target: ChatTarget = { chatId: record.route.chatId, ...(record.route.threadId ? { threadId: record.route.threadId } : {}) };
    const replyId = questionReplyId(record);
    // The buttons are under the question's last chunk.
    const last = planFor(channel, approvalPrompt(record)).length - 1;
    const messageId = channel.sendsOncePerDeliveryId
      ? await channel.sentMessageId?.(target, `${replyId}#${last}`)
      : (await deps.ledger.sentChunks({ sessionId: record.sessionId, replyId })).get(last);
    if (messageId === undefined) {
      log.debug({ sessionId: record.sessionId, approvalId: record.id }, 'decided question not found in the chat; left as it is');
      return;
    }
    const chunk = planFor(channel, decidedQuestionText(record)).at(-1)!;
    const close = channel.closeChoices.bind(channel);
    try {
      await close(target, messageId, chunk.formatted !== undefined ? { text: chunk.formatted, mode: 'formatted' } : { text: chunk.plain, mode: 'plain' });
    } catch (err) {
      if (!(err instanceof ChannelError) || err.code !== CHANNEL_ERROR_CODES.formatRejected) throw err;
      await close(target, messageId, { text: chunk.plain, mode: 'plain' });
    }
  };
}
