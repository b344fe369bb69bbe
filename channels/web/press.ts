/**
 * POST /api/chat/:id/presses: a button under a reply (an approval question's) pressed in the page.
 * Its command goes to the gateway as a message of the user who pressed it, answered in place (as a
 * Telegram callback or a Discord interaction is). The question itself is edited to show the decision
 * without its buttons by the decision (src/gateway/show-decision.ts, through the channel's
 * `closeChoices`), as after a typed command, the expiry or `/stop`: every open page and every reload shows it decided.
 */
import type { Context } from 'hono';
import type { InboundVerdict } from '../../src/core/inbound.js';
import type { OutageLog } from '../../src/log.js';
import type { InboundHandler } from '../channel.js';
import { refusalOf, toWebInbound } from './post-message.js';
import type { ReplyStore } from './reply-store.js';

/** What a press answers (200): the command's answer, and whether the question is settled (its buttons gone). */
export interface PressAnswer {
  answer: string;
  settled: boolean;
}

/**
 * `{ replyId, command, clientMessageId?, userId?, userName? }` → 200 {@link PressAnswer}; 404 when the
 * reply is not in the buffer or has no such button; a refusal as `POST …/messages` answers it; 503
 * when the gateway could not take it (press again: the same `clientMessageId` is answered once).
 */
export async function pressChoice(c: Context, deps: { store: ReplyStore; onMessage?: InboundHandler; log: OutageLog }): Promise<Response> {
  const conversationId = c.req.param('conversationId')!;
  if (!(c.req.header('content-type') ?? '').toLowerCase().startsWith('application/json')) return c.json({ error: 'send the press as `Content-Type: application/json`' }, 415);
  const body = (await c.req.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!body || typeof body.replyId !== 'string' || typeof body.command !== 'string') return c.json({ error: 'body must be JSON with string `replyId` and `command`' }, 400);
  const { replyId, command } = body;
  if (!deps.onMessage) return c.json({ error: 'web chat is not running' }, 503);
  let verdict: InboundVerdict | void;
  try {
    const reply = await deps.store.find(conversationId, replyId);
    if (!reply?.choices?.some((choice) => choice.command === command)) return c.json({ error: 'that message has no such button (it may be too old); type the command instead' }, 404);
    verdict = await deps.onMessage(toWebInbound(c, conversationId, { ...body, text: command }, { answerInPlace: true }));
    deps.log.available();
    const refused = refusalOf(c, verdict);
    if (refused) return refused;
    const answer: PressAnswer = { answer: verdict?.answer?.text ?? 'Done.', settled: verdict?.answer?.settled === true };
    return c.json(answer, 200);
  } catch (err) {
    deps.log.warn({ err, conversationId }, 'web press not accepted');
    return c.json({ error: 'press not taken; press again' }, 503);
  }
}
