/**
 * The gateway's attachment step, between admission and the inbox: every file of a message is
 * judged first (a type nothing reads, a size the platform told over the limit: refused before any
 * download), then downloaded through its channel within the limit and stored in Redis with a TTL.
 * The message enters the inbox with the stored references, never with the bytes. A Redis or
 * network failure rejects (the platform re-delivers; what was stored expires with its TTL).
 */
import type { Channel } from '../../channels/channel.js';
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import { cleanFileName, looksBinary, looksLikePdf, readableKindOf, sniffImageType, tooLargeReply, unsupportedAttachmentReply, type ReadCapabilities } from '../core/attachments.js';
import type { Attachment, ChannelName, InboundMessage } from '../core/inbound.js';
import { ChannelError } from '../errors.js';
import type { Logger } from '../log.js';
import { attachmentIdOf, storeAttachment } from '../redis/attachments.js';
import type { RedisClient } from '../redis/client.js';

/** Options of the attachment step. */
export interface AttachmentIngestOptions extends ReadCapabilities {
  keyPrefix: string;
  /** Largest file accepted, bytes. */
  maxBytes: number;
  /** How long the stored bytes stay in Redis, seconds. */
  ttlSeconds: number;
}

/** What the attachment step needs. */
export interface AttachmentIngestDeps {
  redis: RedisClient;
  /** The channel that delivered a message (its `downloadAttachment` fetches the bytes). */
  channel: (name: ChannelName) => Channel | undefined;
  log: Logger;
}

/** The attachment step's answer: the message's files as stored, or why they were refused. */
export type AttachmentTake =
  | { ok: true; attachments: Attachment[] }
  | { ok: false; outcome: 'too_large' | 'unsupported'; reason: string };

/** The attachment step; `take` resolves with a refusal or the stored files, and rejects when it could not finish (retry). */
export interface AttachmentIngest {
  take(message: InboundMessage, sessionId: string): Promise<AttachmentTake>;
}

/** Creates the attachment step. */
export function createAttachmentIngest(deps: AttachmentIngestDeps, options: AttachmentIngestOptions): AttachmentIngest {
  const log = deps.log.child({ component: 'attachments' });
  return {
    async take(message, sessionId) {
      if (message.attachments.length === 0) return { ok: true, attachments: [] };
      const attachments = message.attachments.map(withCleanName);
      const judged = judge(attachments, options);
      if (judged) return judged;
      const channel = deps.channel(message.channel);
      const stored: Attachment[] = [];
      for (const [index, attachment] of attachments.entries()) {
        const bytes = await download(channel, attachment, options);
        if ('refused' in bytes) return bytes.refused;
        const checked = checkBytes(attachment, bytes.data, options);
        if ('refused' in checked) return checked.refused;
        const ref = await storeAttachment(deps.redis, sessionId, attachmentIdOf(message.id, index), bytes.data, { keyPrefix: options.keyPrefix, ttlSeconds: options.ttlSeconds });
        stored.push({ ...checked.attachment, size: bytes.data.length, stored: ref });
      }
      log.debug({ sessionId, channel: message.channel, files: stored.length, bytes: stored.reduce((sum, a) => sum + (a.size ?? 0), 0) }, 'attachments stored');
      return { ok: true, attachments: stored };
    },
  };
}

/** Refuses before any download: a type nothing reads, a size the platform told over the limit. */
function judge(attachments: readonly Attachment[], options: AttachmentIngestOptions): AttachmentTake | null {
  for (const attachment of attachments) {
    if (readableKindOf(attachment, options) === null) return { ok: false, outcome: 'unsupported', reason: unsupportedAttachmentReply(attachment, options) };
    if (attachment.size !== undefined && attachment.size > options.maxBytes) return { ok: false, outcome: 'too_large', reason: tooLargeReply(attachment, options.maxBytes, attachment.size) };
  }
  return null;
}

async function download(channel: Channel | undefined, attachment: Attachment, options: AttachmentIngestOptions): Promise<{ data: Buffer } | { refused: AttachmentTake }> {
  if (!channel?.downloadAttachment) {
    return { refused: { ok: false, outcome: 'unsupported', reason: 'This chat cannot hand files to me. Please send your request as text.' } };
  }
  try {
    const data = await channel.downloadAttachment(attachment, { maxBytes: options.maxBytes });
    if (data.length > options.maxBytes) return { refused: { ok: false, outcome: 'too_large', reason: tooLargeReply(attachment, options.maxBytes, data.length) } };
    return { data };
  } catch (err) {
    if (err instanceof ChannelError && err.code === CHANNEL_ERROR_CODES.fileTooLarge) {
      return { refused: { ok: false, outcome: 'too_large', reason: tooLargeReply(attachment, options.maxBytes) } };
    }
    if (err instanceof ChannelError && !err.retryable) {
      const name = attachment.fileName ? `"${attachment.fileName}"` : `the ${attachment.kind}`;
      return { refused: { ok: false, outcome: 'unsupported', reason: `I could not fetch ${name} from ${channel.name} (${err.message}). Please send it again.` } };
    }
    throw err; // transient: not accepted, so the platform re-delivers (or the user is asked to resend)
  }
}

/** What the bytes really are: an image must start like one (its real type is what is sent), a PDF like a PDF. */
function checkBytes(attachment: Attachment, data: Buffer, options: AttachmentIngestOptions): { attachment: Attachment } | { refused: AttachmentTake } {
  const kind = readableKindOf(attachment, options);
  const name = attachment.fileName ? `"${attachment.fileName}"` : 'This file';
  if (kind === 'image') {
    const sniffed = sniffImageType(data);
    if (!sniffed) return { refused: { ok: false, outcome: 'unsupported', reason: `${name} does not look like a JPEG, PNG, GIF or WebP image, so I cannot look at it.` } };
    return { attachment: { ...attachment, mimeType: sniffed } };
  }
  if (kind === 'pdf' && !looksLikePdf(data)) return { refused: { ok: false, outcome: 'unsupported', reason: `${name} is not a readable PDF.` } };
  if (kind === 'text' && looksBinary(data)) return { refused: { ok: false, outcome: 'unsupported', reason: `${name} is not a text file (it holds binary data), so I cannot read it.` } };
  return { attachment };
}

function withCleanName(attachment: Attachment): Attachment {
  const { fileName, ...rest } = attachment;
  const clean = cleanFileName(fileName);
  return clean === undefined ? rest : { ...rest, fileName: clean };
}
