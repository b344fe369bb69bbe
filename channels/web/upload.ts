/**
 * The multipart form of POST /api/chat/:id/messages: fields `text` (optional with a file),
 * `clientMessageId`, `userId`, `userName` and one `file`. The file's bytes wait in memory (per
 * request, dropped when it is answered) until the gateway's attachment step asks the channel for
 * them, like it asks Telegram or Discord: refused files are never stored.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { randomUUID } from 'node:crypto';
import type { Attachment } from '../../src/core/inbound.js';
import { formatBytes } from '../../src/core/attachments.js';
import { countOf } from '../../src/core/plural.js';
import { isBlankText } from '../../src/core/text.js';
import type { Logger } from '../../src/log.js';

/** The fields of a post, from JSON or a multipart form. */
export interface PostedFields {
  text: string;
  clientMessageId?: unknown;
  userId?: unknown;
  userName?: unknown;
  /** The uploaded file, multipart only. */
  file?: { attachment: Attachment; bytes: Buffer };
}

/** True when the request is a multipart form. */
export function isMultipart(c: Context): boolean {
  return (c.req.header('content-type') ?? '').toLowerCase().startsWith('multipart/form-data');
}

/**
 * Reads the multipart form. @returns the fields, or an error answer (400 bad form, 413 over
 * `maxBytes`, the file size being known from the form, logged as `upload refused`) to send as it is.
 */
export async function readUpload(c: Context, maxBytes: number, logger: Logger): Promise<PostedFields | Response> {
  let form: FormData;
  try {
    form = await c.req.raw.formData();
  } catch {
    return c.json({ error: 'the multipart form could not be read' }, 400);
  }
  const files = form.getAll('file').filter((value): value is File => typeof value !== 'string');
  if (files.length > 1) return c.json({ error: 'send one `file` per message' }, 400);
  const typed = stringField(form, 'text').trim();
  const text = isBlankText(typed) ? '' : typed; // control characters alone are no text
  const upload = files[0];
  if (!upload && text === '') return c.json({ error: 'the form needs a non-empty `text` or a `file`' }, 400);
  const fields: PostedFields = { text, clientMessageId: form.get('clientMessageId') ?? undefined, userId: form.get('userId') ?? undefined, userName: form.get('userName') ?? undefined };
  if (!upload) return fields;
  const name = upload.name || 'upload';
  if (upload.size > maxBytes) {
    logger.info({ channel: 'web', conversationId: c.req.param('conversationId'), outcome: 'too_large', files: [{ mimeType: upload.type || undefined, size: upload.size }], limitBytes: maxBytes }, 'upload refused');
    return c.json({ error: `"${name}" is ${formatBytes(upload.size)}; the limit is ${formatBytes(maxBytes)}, so it was not read. Please send a smaller file.`, refused: 'too_large' }, 413);
  }
  const bytes = Buffer.from(await upload.arrayBuffer());
  const attachment: Attachment = { kind: kindOf(upload.type), ref: `web-upload:${randomUUID()}`, fileName: name, size: bytes.length };
  if (upload.type) attachment.mimeType = upload.type;
  return { ...fields, file: { attachment, bytes } };
}

/** How long a client is asked to wait when every upload slot is taken, seconds. */
const BUSY_RETRY_AFTER_S = 2;

/**
 * At most `max` multipart posts at once (their bytes are held in memory until answered): one more
 * is answered 503 `{"error","refused":"busy"}` with Retry-After before its body is read.
 */
export function uploadSlots(max: number): MiddlewareHandler {
  let inFlight = 0;
  return async (c, next) => {
    if (!isMultipart(c)) return next();
    if (inFlight >= max) {
      c.header('Retry-After', String(BUSY_RETRY_AFTER_S));
      return c.json({ error: `this gateway is receiving ${countOf(max, 'upload')} already; send the file again in a moment`, refused: 'busy' }, 503);
    }
    inFlight++;
    try {
      await next();
    } finally {
      inFlight--;
    }
  };
}

function stringField(form: FormData, name: string): string {
  const value = form.get(name);
  return typeof value === 'string' ? value : '';
}

function kindOf(mime: string): Attachment['kind'] {
  if (mime.startsWith('image/')) return 'photo';
  if (mime.startsWith('audio/')) return 'audio';
  if (mime.startsWith('video/')) return 'video';
  return 'document';
}
