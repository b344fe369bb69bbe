/**
 * Attachments, the pure part: what kind of file a model can read and how, the reference an
 * image keeps in the projection (the bytes live in Redis for a while, never in the history), and
 * the placeholder an image becomes when it is older than the current exchange or gone.
 */
import { CHATGATE_MARK, lastUserIndex, type ChatMessage, type ContentPart } from './messages.js';
import type { Attachment } from './inbound.js';

/** Default largest attachment accepted, bytes (10 MB). */
export const DEFAULT_MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
/** Default time the bytes of an attachment stay in Redis, seconds (24 h). */
export const DEFAULT_ATTACHMENT_TTL_SECONDS = 86_400;
/** Longest text of one document the model reads, characters (code points); the rest is cut with a note. */
export const DOCUMENT_TEXT_MAX_CHARS = 40_000;

/** How chatgate reads a file: as an image, as text, as a PDF's text, or by transcribing it. */
export type ReadableKind = 'image' | 'text' | 'pdf' | 'audio';

/** What the deployment can read besides images and documents (audio only with a transcription model). */
export interface ReadCapabilities {
  transcription: boolean;
}

const IMAGE_MIME = /^image\/(jpeg|png|gif|webp)$/;
const IMAGE_EXT = /\.(jpe?g|png|gif|webp)$/i;
const AUDIO_MIME = /^audio\/|^video\/ogg$/;
const AUDIO_EXT = /\.(ogg|oga|opus|mp3|m4a|wav|webm|flac|mpga|aac)$/i;
const TEXT_MIME = /^text\/|^application\/(json|xml|x-yaml|yaml|toml|x-sh|javascript|typescript|x-python|sql|csv|x-ndjson)\b/;
const TEXT_EXT = /\.(txt|md|markdown|csv|tsv|json|jsonl|ndjson|ya?ml|toml|ini|cfg|conf|log|xml|html?|css|scss|js|mjs|cjs|jsx|ts|tsx|py|rb|go|rs|java|kt|kts|c|h|cc|cpp|hpp|cs|php|swift|sh|bash|zsh|sql|r|lua|pl|scala|dart|vue|svelte|env|gitignore|dockerfile|makefile|tex|rst|diff|patch)$/i;

/**
 * How an attachment can be read, or null when nothing here reads it (video, stickers, office
 * files, archives...). Judged by MIME type first, then by file name; Telegram photos and voice
 * notes are images and audio by their kind.
 */
export function readableKindOf(attachment: Pick<Attachment, 'kind' | 'mimeType' | 'fileName'>, can: ReadCapabilities): ReadableKind | null {
  const mime = (attachment.mimeType ?? '').toLowerCase().split(';')[0]!.trim();
  const name = attachment.fileName ?? '';
  if (attachment.kind === 'video' || attachment.kind === 'sticker') return null;
  const unknownType = mime === '' || mime === 'application/octet-stream';
  const looksImage = mime.startsWith('image/') || (unknownType && (attachment.kind === 'photo' || IMAGE_EXT.test(name)));
  // Providers read JPEG, PNG, GIF and WebP; SVG, HEIC and the like are refused rather than sent.
  if (looksImage) return IMAGE_MIME.test(mime) || unknownType ? 'image' : null;
  if (mime === 'application/pdf' || (unknownType && /\.pdf$/i.test(name))) return 'pdf';
  if (attachment.kind === 'voice' || attachment.kind === 'audio' || AUDIO_MIME.test(mime) || (unknownType && AUDIO_EXT.test(name))) {
    return can.transcription ? 'audio' : null;
  }
  if (TEXT_MIME.test(mime) || TEXT_EXT.test(name) || /^(dockerfile|makefile|readme)$/i.test(name)) return 'text';
  return null;
}

/** The short answer to a file nothing can read: what it is and what is supported. */
export function unsupportedAttachmentReply(attachment: Pick<Attachment, 'kind' | 'mimeType' | 'fileName'>, can: ReadCapabilities): string {
  const what = attachment.fileName ? `"${attachment.fileName}"` : attachment.kind === 'sticker' ? 'Stickers' : attachment.kind === 'video' ? 'Videos' : 'This file';
  const isAudio = attachment.kind === 'voice' || attachment.kind === 'audio' || (attachment.mimeType ?? '').startsWith('audio/');
  if (isAudio && !can.transcription) return 'I cannot listen to voice messages or audio here: transcription is off (the operator can set CHATGATE_TRANSCRIBE_MODEL). Please type your message.';
  const verb = attachment.fileName ? 'is a kind of file I cannot read' : 'cannot be read here';
  return `${what} ${verb}. I can read ${supportedKindsText(can)}.`;
}

/** "images (JPEG, PNG, GIF, WebP), PDFs, text files (…)" and, with transcription, voice messages and audio. */
export function supportedKindsText(can: ReadCapabilities): string {
  const kinds = ['images (JPEG, PNG, GIF, WebP)', 'PDFs', 'text files (txt, md, csv, json, source code)'];
  if (can.transcription) kinds.push('voice messages and audio files');
  return `${kinds.slice(0, -1).join(', ')} and ${kinds.at(-1)!}`;
}

/** Longest file name kept, code points. */
export const MAX_FILE_NAME_CHARS = 100;

/**
 * A file name fit to show the model and the user: control characters and line breaks become
 * spaces, brackets are dropped (a name cannot close or fake one of our `[…]` lines), cut at
 * {@link MAX_FILE_NAME_CHARS} code points; empty: undefined.
 */
export function cleanFileName(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const cleaned = [...name.replace(/\p{Cc}|[\u2028\u2029]/gu, ' ').replace(/[[\]]/g, '').replace(/\s+/g, ' ').trim()];
  return cleaned.length === 0 ? undefined : cleaned.slice(0, MAX_FILE_NAME_CHARS).join('');
}

/** True when the bytes hold a NUL in their first 8 KB: a binary file, whatever its name says. */
export function looksBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, 8192).includes(0);
}

/** "10 MB", "512 KB", "1.5 MB": a byte count as a person reads it. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const [value, unit] = bytes < 1024 * 1024 ? [bytes / 1024, 'KB'] : [bytes / (1024 * 1024), 'MB'];
  return `${Number(value.toFixed(value < 10 ? 1 : 0))} ${unit}`;
}

/** The refusal of a file over the limit. `size` undefined: it was found too large while downloading. */
export function tooLargeReply(attachment: Pick<Attachment, 'fileName' | 'kind'>, maxBytes: number, size?: number): string {
  const what = attachment.fileName ? `"${attachment.fileName}"` : `This ${attachment.kind === 'photo' ? 'image' : attachment.kind}`;
  const has = size !== undefined ? ` is ${formatBytes(size)}; the limit is ${formatBytes(maxBytes)}` : ` is over the limit of ${formatBytes(maxBytes)}`;
  return `${what}${has}, so it was not read. Please send a smaller file (or paste the part that matters as text).`;
}

/** Scheme of the reference URL an image part keeps in the projection instead of its bytes. */
export const ATTACHMENT_URL_SCHEME = 'chatgate-attachment:';

/** What an image part's reference says: where the bytes are (`id`), their type and the file's name. */
export interface AttachmentRef {
  id: string;
  mimeType: string;
  fileName: string;
}

/** The reference URL of a stored image: `chatgate-attachment:<id>?type=…&name=…`. */
export function attachmentUrl(ref: AttachmentRef): string {
  return `${ATTACHMENT_URL_SCHEME}${ref.id}?${new URLSearchParams({ type: ref.mimeType, name: ref.fileName }).toString()}`;
}

/** The reference of an image part's URL, or null when it is not one of ours (a data: or https: URL). */
export function parseAttachmentUrl(url: string): AttachmentRef | null {
  if (!url.startsWith(ATTACHMENT_URL_SCHEME)) return null;
  const rest = url.slice(ATTACHMENT_URL_SCHEME.length);
  const q = rest.indexOf('?');
  const id = q === -1 ? rest : rest.slice(0, q);
  if (!/^[\w-]{1,80}$/.test(id)) return null;
  const params = new URLSearchParams(q === -1 ? '' : rest.slice(q + 1));
  return { id, mimeType: params.get('type') ?? 'image/jpeg', fileName: params.get('name') ?? 'image' };
}

/** Why an image is shown as a line of text instead. */
export type ImagePlaceholderReason = 'older' | 'expired' | 'no-vision';

/** The one-line placeholder of an image: `[chatgate:image] photo.jpg (…)`. */
export function imagePlaceholder(fileName: string, reason: ImagePlaceholderReason): string {
  const why = { older: 'an earlier image, no longer shown', expired: 'image no longer stored', 'no-vision': 'this model cannot see images' }[reason];
  return `${CHATGATE_MARK}image] ${fileName} (${why})`;
}

/**
 * The messages with every image part before the current exchange (the latest user message and
 * what follows) replaced by its one-line placeholder. A history without such images is returned
 * as the same array, its messages the same objects: text-only sessions are untouched.
 */
export function placeholderOlderImages(messages: ChatMessage[]): ChatMessage[] {
  const exchange = lastUserIndex(messages);
  let out: ChatMessage[] | null = null;
  for (let i = 0; i < exchange; i++) {
    const message = messages[i]!;
    if (message.role !== 'user' || typeof message.content === 'string' || !message.content.some((part) => part.type === 'image_url')) continue;
    out ??= messages.slice();
    out[i] = { role: 'user', content: mapImageParts(message.content, (ref) => imagePlaceholder(ref?.fileName ?? 'image', 'older')) };
  }
  return out ?? messages;
}

/**
 * Replaces each image part by the text `placeholder(ref)` returns, or keeps it when that is null.
 * Adjacent text stays as separate parts (the order of what the user sent is kept).
 */
export function mapImageParts(parts: readonly ContentPart[], placeholder: (ref: AttachmentRef | null) => string | null): ContentPart[] {
  return parts.map((part) => {
    if (part.type !== 'image_url') return part;
    const text = placeholder(parseAttachmentUrl(part.image_url.url));
    return text === null ? part : { type: 'text', text };
  });
}

/** True when a message holds an image part. */
export function hasImageParts(message: ChatMessage): boolean {
  return message.role === 'user' && Array.isArray(message.content) && message.content.some((part) => part.type === 'image_url');
}

/** The image type the bytes start with (JPEG, PNG, GIF, WebP), or null: what is sent is what the bytes are. */
export function sniffImageType(bytes: Uint8Array): string | null {
  const starts = (...sig: number[]) => sig.every((b, k) => bytes[k] === b);
  if (starts(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0x47, 0x49, 0x46, 0x38)) return 'image/gif';
  if (starts(0x52, 0x49, 0x46, 0x46) && bytes[8] === 0x57 && bytes[9] === 0x45 && bytes[10] === 0x42 && bytes[11] === 0x50) return 'image/webp';
  return null;
}

/** True when the bytes start like a PDF (`%PDF-`). */
export function looksLikePdf(bytes: Uint8Array): boolean {
  return String.fromCharCode(...bytes.subarray(0, 1024)).includes('%PDF-');
}
