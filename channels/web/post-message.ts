/**
 * POST /api/chat/:id/messages: the web chat's message into the gateway, and the gateway's verdict
 * answered at once (202 accepted; 403, 413, 415, 429 with Retry-After refused; 503 not taken).
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import { randomUUID } from 'node:crypto';
import { MAX_USER_NAME_CHARS, toWellFormedInbound, type InboundMessage, type InboundVerdict } from '../../src/core/inbound.js';
import { isBlankText, toWellFormedText, truncateText } from '../../src/core/text.js';
import { toClientNetwork } from '../../src/core/client-network.js';
import type { Logger, OutageLog } from '../../src/log.js';
import type { InboundHandler } from '../channel.js';
import { isMultipart, readUpload, type PostedFields } from './upload.js';

/** Conversation, client message and user ids: 1–64 characters of A-Z, a-z, 0-9, _ and -. */
export const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** Where a multipart post's file waits for the gateway's attachment step (`downloadAttachment`). */
export interface PendingUploads {
  set(ref: string, bytes: Buffer): void;
  delete(ref: string): void;
}

/**
 * POST /api/chat/:id/messages — 202 once the message is accepted, a refusal at once, 503 when it
 * could not be taken. JSON, or a multipart form with one `file` (channels/web/upload.ts).
 */
export async function postMessage(c: Context, onMessage: InboundHandler | undefined, log: OutageLog, uploads?: { pending: PendingUploads; maxBytes: number; logger: Logger }): Promise<Response> {
  const conversationId = c.req.param('conversationId')!;
  const fields = uploads && isMultipart(c) ? await readUpload(c, uploads.maxBytes, uploads.logger) : await readJson(c);
  if (fields instanceof Response) return fields;
  const { text, file } = fields;
  const message = toWebInbound(c, conversationId, { ...fields, text, attachments: file ? [file.attachment] : [] });
  if (!file) return deliver(c, message, onMessage, log);
  uploads!.pending.set(file.attachment.ref, file.bytes);
  try {
    return await deliver(c, message, onMessage, log);
  } finally {
    uploads!.pending.delete(file.attachment.ref);
  }
}

/** What a web post names: its text, and the client's ids and name as sent (checked here). */
export interface WebPostFields {
  text: string;
  clientMessageId?: unknown;
  userId?: unknown;
  userName?: unknown;
  attachments?: InboundMessage['attachments'];
}

/**
 * The one way a web post becomes an `InboundMessage`: ids the client sent that are not ids are
 * replaced (a fresh message id; the conversation as the user), the name cut and made well-formed.
 */
export function toWebInbound(c: Context, conversationId: string, fields: WebPostFields, extra: Pick<InboundMessage, 'answerInPlace'> = {}): InboundMessage {
  const clientMessageId = typeof fields.clientMessageId === 'string' && ID_RE.test(fields.clientMessageId) ? fields.clientMessageId : randomUUID();
  const userId = typeof fields.userId === 'string' && ID_RE.test(fields.userId) ? fields.userId : conversationId;
  const userName = typeof fields.userName === 'string' && fields.userName.trim() !== '' ? truncateText(toWellFormedText(fields.userName.trim()), MAX_USER_NAME_CHARS) : 'web user';
  return toWellFormedInbound({
    id: `web:${conversationId}:${clientMessageId}`,
    channel: 'web',
    chatId: conversationId,
    userId,
    userName,
    text: fields.text,
    attachments: fields.attachments ?? [],
    platformMessageId: clientMessageId,
    chatType: 'private',
    receivedAt: Date.now(),
    refusalsAnswered: true,
    ...extra,
    ...withClientAddress(c),
  });
}

/** The JSON form (the only one without uploads): a cross-site `text/plain` post cannot send it without a CORS preflight we never grant. */
async function readJson(c: Context): Promise<PostedFields | Response> {
  if (!(c.req.header('content-type') ?? '').toLowerCase().startsWith('application/json')) {
    return c.json({ error: 'send the message as `Content-Type: application/json` (or `multipart/form-data` with a `file`)' }, 415);
  }
  const body = (await c.req.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  const text = typeof body?.text === 'string' ? body.text.trim() : '';
  // Control characters alone (NUL, BEL, ESC…) say nothing: refused as empty text is.
  if (!body || isBlankText(text)) return c.json({ error: 'body must be JSON with a non-empty `text`' }, 400);
  return { text, clientMessageId: body.clientMessageId, userId: body.userId, userName: body.userName };
}

async function deliver(c: Context, message: InboundMessage, onMessage: InboundHandler | undefined, log: OutageLog): Promise<Response> {
  const conversationId = message.chatId;
  if (!onMessage) return c.json({ error: 'web chat is not running' }, 503);
  let verdict: InboundVerdict | void;
  try {
    verdict = await onMessage(message);
    log.available();
  } catch (err) {
    log.warn({ err, conversationId }, 'web message not accepted');
    return c.json({ error: 'message not accepted; retry with the same clientMessageId' }, 503);
  }
  return answerVerdict(c, message.id, verdict);
}

/** 202 when the gateway took the message; a refusal answered at once (403, 429 with Retry-After, 413). */
function answerVerdict(c: Context, id: string, verdict: InboundVerdict | void): Response {
  return refusalOf(c, verdict) ?? c.json({ id, accepted: true }, 202);
}

/** The answer to a refusal (403, 429 with Retry-After or for a used-up budget, 413, 415), or undefined when the gateway took the message. */
export function refusalOf(c: Context, verdict: InboundVerdict | void): Response | undefined {
  const error = verdict?.reason ?? 'message refused';
  switch (verdict?.outcome) {
    case 'denied':
      return c.json({ error, refused: 'denied' }, 403);
    case 'rate_limited': {
      const retryAfterS = Math.max(1, Math.ceil((verdict.retryAfterMs ?? 1000) / 1000));
      c.header('Retry-After', String(retryAfterS));
      return c.json({ error, refused: 'rate_limited', retryAfterMs: retryAfterS * 1000 }, 429);
    }
    case 'over_budget':
      // The reason says which limit and when it resets; sending again before then gets the same answer.
      return c.json({ error, refused: 'over_budget' }, 429);
    case 'too_long':
      return c.json({ error, refused: 'too_long' }, 413);
    case 'too_large':
      return c.json({ error, refused: 'too_large' }, 413);
    case 'unsupported':
      return c.json({ error, refused: 'unsupported' }, 415);
    default:
      return undefined;
  }
}

/**
 * The TCP peer's network, as the per-address limits count it (the rate limit, the read slots): an
 * IPv4 address, or an IPv6 address's /64. Undefined when not served by @hono/node-server.
 */
export function clientAddressOf(c: Context): string | undefined {
  try {
    const address = getConnInfo(c).remote.address;
    return address ? toClientNetwork(address) : undefined;
  } catch {
    return undefined;
  }
}

function withClientAddress(c: Context): { clientAddress?: string } {
  const address = clientAddressOf(c);
  return address ? { clientAddress: address } : {};
}
