import { answeredIds, type InboundMessage, type OutboundMessage } from '../src/core/inbound.js';
import type { Logger } from '../src/log.js';
import { replyJobId } from '../src/queue/names.js';
import type { RedisClient } from '../src/redis/client.js';
import { deadLetterProcessing, readProcessing } from '../src/redis/inbox.js';
import type { SessionKeys } from '../src/redis/keys.js';
import { TURN_NOTICES } from './notices.js';

/** A turn that failed for good: its session, the lease it holds and why it failed. */
export interface FailedTurn {
  sessionId: string;
  keys: SessionKeys;
  /** Fencing token of the lease the caller holds. */
  fence: number;
  jobId?: string;
  err: unknown;
  /** What the user is told. Default {@link TURN_NOTICES}.failed. */
  notice?: string;
}

/**
 * Moves the failed turn's messages (the processing list) to the session's dead-letter list and
 * puts a notice for the user in the outbox (stable id per set of messages), atomically and only
 * under the caller's lease; the caller then flushes the outbox. Later turns start clean.
 * @returns the number of messages moved (0 when there were none, or the lease was gone).
 */
export async function deadLetterTurn(deps: { redis: RedisClient; logger: Logger }, turn: FailedTurn): Promise<number> {
  const items = await readProcessing(deps.redis, turn.keys);
  if (items.length === 0) return 0;
  const moved = await deadLetterProcessing(deps.redis, turn.keys, turn.fence, failureNotice(turn.sessionId, items, turn.notice));
  if (moved === null) {
    deps.logger.warn({ messages: items.length }, 'dead letter skipped: the session lease was lost');
    return 0;
  }
  deps.logger.error({ err: turn.err, messages: moved, inboundIds: items.map((item) => item.id), key: turn.keys.failed }, 'turn failed for good: messages moved to the dead-letter list, user notified');
  return moved;
}

function failureNotice(sessionId: string, items: InboundMessage[], text = TURN_NOTICES.failed(items.length)): OutboundMessage {
  const last = items[items.length - 1]!;
  const notice: OutboundMessage = {
    id: replyJobId(items.map((item) => item.id), 'failed'), sessionId, channel: last.channel, chatId: last.chatId,
    // It answers the turn's messages in place of the reply: an API request takes it only when it is theirs.
    text, kind: 'notice', liveReplyId: replyJobId(items.map((item) => item.id), 'reply'), answers: answeredIds(items),
  };
  if (last.threadId) notice.threadId = last.threadId;
  return notice;
}
