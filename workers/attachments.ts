/**
 * The worker's side of attachments. When a message enters the projection its files are read once:
 * documents become bounded text with the file name, voice and audio their transcript, images a
 * reference part (`chatgate-attachment:<id>`, bytes stay in Redis). Before each model call the
 * references are inlined as base64 `data:` URLs while the bytes are still stored, for a model that
 * sees images; otherwise (expired, or a model without vision) they become one-line placeholders.
 */
import type { CallScope } from '../src/core/budget.js';
import { attachmentUrl, DOCUMENT_TEXT_MAX_CHARS, imagePlaceholder, parseAttachmentUrl, readableKindOf, type AttachmentRef } from '../src/core/attachments.js';
import type { Attachment, InboundMessage } from '../src/core/inbound.js';
import type { ChatMessage, ContentPart } from '../src/core/messages.js';
import { BudgetError } from '../src/errors.js';
import type { Logger } from '../src/log.js';
import type { Transcriber } from '../src/llm/transcribe.js';
import { loadAttachment } from '../src/redis/attachments.js';
import type { RedisClient } from '../src/redis/client.js';
import { visionNoticeKey } from '../src/redis/keys.js';
import { boundDocumentText, decodeTextFile, documentBlock, extractPdfText } from './documents.js';

/** What the reader needs. */
export interface AttachmentReaderDeps {
  redis: RedisClient;
  keyPrefix: string;
  log: Logger;
  /** Transcribes voice and audio; absent: transcription is off. */
  transcriber?: Transcriber;
}

/** The files of one message, read: text blocks the model reads and image reference parts. */
export interface ReadFiles {
  texts: string[];
  images: ContentPart[];
  /** What the user is told about files that could not be read (one line each). */
  notices: string[];
}

/** Reads the files of inbound messages and inlines stored images into requests. */
export interface AttachmentReader {
  /** Whether the model is sent images. */
  readonly vision: boolean;
  /** Reads the message's files; a transcription counts for `scope` (the turn's) in the budgets. */
  read(sessionId: string, message: InboundMessage, scope?: CallScope): Promise<ReadFiles>;
  /**
   * The request's messages with image references inlined (or placeholders). `cache` keeps the
   * data URLs of one turn, so the turn's later calls do not read Redis again.
   */
  inline(sessionId: string, messages: readonly ChatMessage[], cache: Map<string, string | null>): Promise<ChatMessage[]>;
  /** True the first time a session is told its model cannot see images (one Redis marker per session). */
  firstVisionNotice(sessionId: string): Promise<boolean>;
}

/**
 * Images inlined into one request at most, the newest; older ones are sent as placeholders (a
 * request with dozens of photos would cost thousands of tokens and tens of MB of base64).
 */
export const MAX_INLINE_IMAGES = 6;

/** The notice, once per session, that the model cannot see images. */
export const NO_VISION_NOTICE = 'Note: the model behind this chat cannot see images, so it only gets their file names. Describe what matters in the picture as text.';

/** Options of {@link createAttachmentReader}. */
export interface AttachmentReaderOptions {
  /** Whether images are sent (`supportsVision`, CHATGATE_VISION). */
  vision: boolean;
  /** Characters (code points) all documents of one message may give the model. Default {@link DOCUMENT_TEXT_MAX_CHARS}. */
  maxDocumentChars?: number;
}

/** Creates the reader. */
export function createAttachmentReader(deps: AttachmentReaderDeps, options: AttachmentReaderOptions): AttachmentReader {
  const log = deps.log.child({ component: 'attachments' });
  return {
    vision: options.vision,
    async read(sessionId, message, scope) {
      const files: ReadFiles = { texts: [], images: [], notices: [] };
      const documents = message.attachments.filter((a) => ['text', 'pdf'].includes(readableKindOf(a, { transcription: true }) ?? '')).length;
      const maxChars = Math.max(1000, Math.floor((options.maxDocumentChars ?? DOCUMENT_TEXT_MAX_CHARS) / Math.max(1, documents)));
      for (const attachment of message.attachments) await readOne({ ...deps, log }, { sessionId, scope }, attachment, files, maxChars);
      return files;
    },
    async inline(sessionId, messages, cache) {
      const shown = newestImages(messages, MAX_INLINE_IMAGES);
      const out: ChatMessage[] = [];
      for (const message of messages) {
        if (message.role !== 'user' || typeof message.content === 'string' || !message.content.some((p) => p.type === 'image_url')) {
          out.push(message);
          continue;
        }
        const parts = await inlineParts(deps, sessionId, message.content, { vision: options.vision, shown }, cache);
        out.push({ role: 'user', content: parts });
      }
      return out;
    },
    async firstVisionNotice(sessionId) {
      return (await deps.redis.set(visionNoticeKey(sessionId, deps.keyPrefix), '1', 'NX')) === 'OK';
    },
  };
}

/** What the transcript keeps of a message's files beside the message: kinds, names and the user's own words. */
export function transcriptFiles(message: InboundMessage): { attachments?: Array<{ kind: string; fileName: string }>; userText?: string } {
  if (message.attachments.length === 0) return {};
  return { attachments: message.attachments.map((a) => ({ kind: a.kind, fileName: a.fileName ?? a.kind })), userText: message.text };
}

/** True when a message brings an image (to tell a session without vision, once). */
export function bringsImage(message: InboundMessage): boolean {
  return message.attachments.some((a) => a.stored !== undefined && readableKindOf(a, { transcription: true }) === 'image');
}

async function readOne(deps: AttachmentReaderDeps, { sessionId, scope }: { sessionId: string; scope?: CallScope }, attachment: Attachment, files: ReadFiles, maxChars: number): Promise<void> {
  const name = attachment.fileName ?? attachment.kind;
  const kind = readableKindOf(attachment, { transcription: true });
  if (!attachment.stored || kind === null) {
    files.texts.push(`[file ${name}: not read]`);
    return;
  }
  if (kind === 'image') {
    files.images.push({ type: 'image_url', image_url: { url: attachmentUrl({ id: attachment.stored.id, mimeType: attachment.mimeType ?? 'image/jpeg', fileName: name }) } });
    return;
  }
  const bytes = await loadAttachment(deps.redis, sessionId, attachment.stored.id, deps.keyPrefix);
  if (!bytes) {
    files.texts.push(`[file ${name}: no longer stored, so it was not read]`);
    files.notices.push(`I could not read ${name}: it was kept for a limited time and is gone now. Please send it again.`);
    return;
  }
  if (kind === 'audio') return transcribe(deps, { name, scope }, attachment, bytes, files);
  try {
    const doc = kind === 'pdf' ? await extractPdfText(bytes) : { text: decodeTextFile(bytes) };
    files.texts.push(documentBlock(name, kind, bytes.length, { ...boundDocumentText(doc.text, maxChars), ...('pages' in doc ? { pages: doc.pages } : {}) }));
  } catch (err) {
    deps.log.info({ err, sessionId, fileName: name }, 'document not readable');
    files.texts.push(`[file ${name}: could not be read as ${kind === 'pdf' ? 'a PDF' : 'text'}]`);
    files.notices.push(`I could not read ${name} (${err instanceof Error ? err.message : String(err)}). Is it damaged or password-protected?`);
  }
}

async function transcribe(deps: AttachmentReaderDeps, { name, scope }: { name: string; scope?: CallScope }, attachment: Attachment, bytes: Buffer, files: ReadFiles): Promise<void> {
  const what = attachment.kind === 'voice' ? 'voice message' : `audio file ${name}`;
  if (!deps.transcriber) {
    files.texts.push(`[${what}: not transcribed, transcription is off]`);
    files.notices.push('I cannot listen to voice messages or audio here: transcription is off (the operator can set CHATGATE_TRANSCRIBE_MODEL). Please type your message.');
    return;
  }
  try {
    const { text } = await deps.transcriber.transcribe({ bytes, fileName: name, mimeType: attachment.mimeType }, scope ? { scope } : {});
    files.texts.push(text === '' ? `[${what}: no speech could be recognised]` : `[${what}, transcribed]\n${text}`);
  } catch (err) {
    if (err instanceof BudgetError) {
      // A used-up budget is no failure: the user reads which limit holds and until when.
      files.texts.push(`[${what}: not transcribed, the budget is used up]`);
      files.notices.push(`I did not transcribe your ${what}: ${err.notice}`);
      return;
    }
    deps.log.warn({ err, fileName: name }, 'transcription failed');
    files.texts.push(`[${what}: could not be transcribed]`);
    files.notices.push(`I could not transcribe your ${what} (${err instanceof Error ? err.message : String(err)}). Please send it again in a moment, or type it.`);
  }
}

/** Ids of the newest `max` stored images of the messages. */
function newestImages(messages: readonly ChatMessage[], max: number): Set<string> {
  const ids: string[] = [];
  for (const message of messages) {
    if (message.role !== 'user' || typeof message.content === 'string') continue;
    for (const part of message.content) {
      const ref = parseRef(part);
      if (ref) ids.push(ref.id);
    }
  }
  return new Set(ids.slice(-max));
}

async function inlineParts(deps: AttachmentReaderDeps, sessionId: string, parts: ContentPart[], show: { vision: boolean; shown: Set<string> }, cache: Map<string, string | null>): Promise<ContentPart[]> {
  const urls = new Map<string, string | null>();
  for (const part of parts) {
    const ref = parseRef(part);
    if (ref && show.vision && show.shown.has(ref.id) && !urls.has(ref.id)) urls.set(ref.id, await dataUrl(deps, sessionId, ref, cache));
  }
  return parts.map((part) => {
    if (part.type !== 'image_url') return part;
    const ref = parseRef(part);
    if (!ref) return part; // someone else's URL (an embedder's https image): sent as it is
    if (!show.vision) return { type: 'text', text: imagePlaceholder(ref.fileName, 'no-vision') };
    if (!show.shown.has(ref.id)) return { type: 'text', text: imagePlaceholder(ref.fileName, 'older') };
    const url = urls.get(ref.id);
    return url ? { type: 'image_url', image_url: { url, detail: 'auto' } } : { type: 'text', text: imagePlaceholder(ref.fileName, 'expired') };
  });
}

function parseRef(part: ContentPart): AttachmentRef | null {
  return part.type === 'image_url' ? parseAttachmentUrl(part.image_url.url) : null;
}

async function dataUrl(deps: AttachmentReaderDeps, sessionId: string, ref: AttachmentRef, cache: Map<string, string | null>): Promise<string | null> {
  if (cache.has(ref.id)) return cache.get(ref.id)!;
  const bytes = await loadAttachment(deps.redis, sessionId, ref.id, deps.keyPrefix);
  const url = bytes ? `data:${ref.mimeType};base64,${bytes.toString('base64')}` : null;
  cache.set(ref.id, url);
  return url;
}
