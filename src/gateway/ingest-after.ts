/**
 * What follows an accepted message in the background (the hygiene check, then the session's turn),
 * and the notices the ingest steps send through the outbound queue.
 */
import { automaticCompactionNotice } from '../core/compaction/compaction-text.js';
import type { InboundMessage, OutboundMessage } from '../core/inbound.js';
import { replyJobId } from '../queue/names.js';
import { enqueueOutbound } from '../outbound/outbound-queue.js';
import type { HygieneFigures } from '../redis/hygiene-figures.js';
import type { IngestContext } from './ingest-context.js';

/** The hygiene check (with the accept's figures when it has them), then the session's turn job. */
export async function hygieneThenTurn(ctx: IngestContext, sessionId: string, message: InboundMessage, figures?: HygieneFigures): Promise<void> {
  const channel = message.channel;
  await runHygiene(ctx, sessionId, message, figures);
  await ctx.deps.producer.enqueueTurn(sessionId).catch((err: unknown) => {
    ctx.outage.warn({ err, sessionId, channel }, 'turn not enqueued after hygiene; the pending sweeper will');
  });
}

/**
 * Enqueues a notice for the message's chat. In groups it quotes the message it answers, so
 * everyone sees whose command it was; with `quote` (a refusal) it always does. It names the
 * message it answers (`answers`): an API request takes it only when it is that message's.
 */
export function notify(ctx: IngestContext, message: InboundMessage, sessionId: string, text: string, tag: string, quote = false) {
  const id = replyJobId([message.id, tag], 'notice');
  const notice: OutboundMessage = {
    id, sessionId, channel: message.channel, chatId: message.chatId, threadId: message.threadId, text, kind: 'notice', answers: [message.id],
    ...((quote || message.chatType === 'group') && message.platformMessageId ? { replyTo: message.platformMessageId } : {}),
  };
  return enqueueOutbound(ctx.deps.outbound, notice);
}

async function runHygiene(ctx: IngestContext, sessionId: string, message: InboundMessage, figures?: HygieneFigures): Promise<void> {
  const channel = message.channel;
  try {
    // The summary counts for the sender whose message brought the session over the line, and the chat.
    const result = await (ctx.deps.hygiene ?? ctx.deps.ops).hygiene(sessionId, figures, `${channel}:${message.userId}`);
    if (!result) return;
    ctx.metrics.record({ type: 'hygiene_fired', channel });
    ctx.log.info({ sessionId, channel, outcome: result.outcome, tokensBefore: result.tokensBefore, tokensAfter: result.tokensAfter }, 'hygiene compaction');
    const notice = ctx.options.compactionNotice === false ? null : automaticCompactionNotice(result);
    // Once per compaction: the id is the message's whose hygiene ran it, so a re-run cannot repeat it.
    if (notice) await notify(ctx, message, sessionId, notice, 'hygiene-compaction').catch((err: unknown) => ctx.outage.warn({ err, sessionId, channel }, 'compaction notice not enqueued'));
  } catch (err) {
    ctx.outage.warn({ err, sessionId, channel }, 'hygiene compaction failed; dispatching anyway');
  }
}
