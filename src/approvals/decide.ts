import type { ApprovalRecord } from '../core/approval.js';
import type { InboundMessage } from '../core/inbound.js';
import type { Logger } from '../log.js';
import type { TurnProducer } from '../queue/producer.js';
import type { ApprovalStore, DecisionOutcome, DecisionRequest } from './store.js';

/** What deciding an approval needs: the store, and the producer whose accept is the one way into an inbox. */
export interface ApprovalDeps {
  store: ApprovalStore;
  producer: Pick<TurnProducer, 'submitInbound'>;
  logger: Logger;
  /**
   * Shows a decision on its question in the chat (the text says it, the buttons go): called for every
   * decision, whoever made it — a press, a typed command, the expiry, `/stop` or `/reset` (src/gateway/show-decision.ts) —
   * and again whenever a decided question is decided again (a second press, the expiry's look at it):
   * it must be idempotent. Absent: questions keep their buttons (a later press is told it was decided).
   * Best effort: a failure is logged.
   */
  showDecision?: (record: ApprovalRecord) => Promise<void>;
}

/**
 * Decides approval `id` of a session (once: src/approvals/scripts/decide-approval-3.lua) and wakes its
 * turn: the decision enters the session's inbox as an event (`approval:<id>`, so a second press or
 * gateway adds nothing) and a turn job is made pending, so the turn resumes on any worker, in order
 * with the session's other work. An approval decided before is woken again too: that heals a
 * gateway that died between a decision and its wake-up. The decision is shown on its question
 * (`showDecision`), the one way every channel's question loses its buttons; one decided before is shown
 * again, which closes buttons nothing could close then (`chatgate reset` holds no channel, a gateway
 * died before showing it): a press on them is told "Already decided" and they go. `messageId`: the
 * message that asked for the decision (a command, a press), which the resumed turn answers.
 */
export async function decideAndWake(deps: ApprovalDeps, sessionId: string, id: string, request: DecisionRequest, messageId?: string): Promise<DecisionOutcome> {
  const result = await deps.store.decide(sessionId, id, request);
  if (result.outcome === 'applied' || result.outcome === 'decided') {
    await deps.producer.submitInbound(decisionEvent(result.record, messageId));
    if (result.outcome === 'applied') deps.logger.info({ sessionId, approvalId: id, tool: result.record.tool, state: result.record.state, via: result.record.decidedVia }, 'tool call decided');
    await deps.showDecision?.(result.record).catch((err: unknown) => deps.logger.warn({ err, sessionId, approvalId: id }, 'decided question not edited'));
  }
  return result;
}

/** The inbox event of a decision: in the chat the question was asked in, as its asker (the same session key); `messageId` as in {@link decideAndWake}. */
export function decisionEvent(record: ApprovalRecord, messageId?: string): InboundMessage {
  const { route } = record;
  return {
    id: `approval:${record.id}`, channel: route.channel, chatId: route.chatId, ...(route.threadId ? { threadId: route.threadId } : {}),
    userId: record.askedBy.userId, userName: record.askedBy.userName, chatType: record.chatType, text: '', attachments: [],
    receivedAt: record.decidedAtMs ?? Date.now(), event: { type: 'approval', approvalId: record.id, state: record.state, ...(messageId ? { messageId } : {}) },
  };
}
