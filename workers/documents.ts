/**
 * Documents as text the model reads: text files decoded as UTF-8, PDFs through unpdf (pdf.js, no
 * native code), both cut at {@link DOCUMENT_TEXT_MAX_CHARS} code points with a note saying where.
 */
import { DOCUMENT_TEXT_MAX_CHARS, formatBytes } from '../src/core/attachments.js';
import { headEnd, toWellFormedText } from '../src/core/text.js';

/** Pages of a PDF read at most (a 10 MB PDF may hold thousands). */
export const MAX_PDF_PAGES = 200;

/** The text of a document and how much of it the model gets. */
export interface DocumentText {
  text: string;
  /** Characters (code points) of the whole text, before the cut. */
  totalChars: number;
  cut: boolean;
  /** Pages of a PDF, and how many were read. */
  pages?: { total: number; read: number };
}

/** A text file's content: UTF-8 (invalid bytes become U+FFFD), without a byte-order mark. */
export function decodeTextFile(bytes: Buffer): string {
  return toWellFormedText(new TextDecoder('utf-8', { fatal: false }).decode(bytes).replace(/^\uFEFF/, ''));
}

/**
 * The text of a PDF, page by page (at most {@link MAX_PDF_PAGES}).
 * @throws Error when the bytes are not a PDF pdf.js can open (damaged, encrypted).
 */
export async function extractPdfText(bytes: Buffer): Promise<{ text: string; pages: { total: number; read: number } }> {
  const { getDocumentProxy } = await import('unpdf');
  const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  try {
    const read = Math.min(pdf.numPages, MAX_PDF_PAGES);
    const pages: string[] = [];
    for (let n = 1; n <= read; n++) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      pages.push(content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join('').trim());
    }
    return { text: toWellFormedText(pages.join('\n\n')), pages: { total: pdf.numPages, read } };
  } finally {
    await pdf.destroy().catch(() => undefined);
  }
}

/** `text` cut at `maxChars` code points (default {@link DOCUMENT_TEXT_MAX_CHARS}), saying whether it was. */
export function boundDocumentText(text: string, maxChars = DOCUMENT_TEXT_MAX_CHARS): Omit<DocumentText, 'pages'> {
  const units = codeUnitsOf(text, maxChars);
  if (units >= text.length) return { text, totalChars: countCodePoints(text), cut: false };
  return { text: text.slice(0, headEnd(text, units)), totalChars: countCodePoints(text), cut: true };
}

/** The block the model reads for one document: a header naming the file, its text, and where it was cut. */
export function documentBlock(fileName: string, kind: 'text' | 'pdf', bytes: number, doc: DocumentText): string {
  const pages = doc.pages ? `, ${doc.pages.total} page${doc.pages.total === 1 ? '' : 's'}` : '';
  const header = `[file ${fileName} (${kind === 'pdf' ? 'PDF' : 'text'}, ${formatBytes(bytes)}${pages})]`;
  if (doc.text.trim() === '') return `${header}\n(no text could be read from it${kind === 'pdf' ? ': it may be scanned images' : ''})`;
  const notes: string[] = [];
  if (doc.cut) notes.push(`cut here: the first ${countCodePoints(doc.text).toLocaleString('en-US')} of ${doc.totalChars.toLocaleString('en-US')} characters are shown`);
  if (doc.pages && doc.pages.read < doc.pages.total) notes.push(`only the first ${doc.pages.read} of ${doc.pages.total} pages were read`);
  return `${header}\n${doc.text.trimEnd()}${notes.length > 0 ? `\n[end of ${fileName}: ${notes.join('; ')}]` : `\n[end of ${fileName}]`}`;
}

/** UTF-16 length of the first `points` code points of `text`. */
function codeUnitsOf(text: string, points: number): number {
  let units = 0;
  let count = 0;
  for (const ch of text) {
    if (count === points) break;
    units += ch.length;
    count++;
  }
  return units;
}

function countCodePoints(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0xdc00 || code > 0xdfff || i === 0 || text.charCodeAt(i - 1) < 0xd800 || text.charCodeAt(i - 1) > 0xdbff) count++;
  }
  return count;
}
