/**
 * Markdown → Telegram HTML (parse_mode `HTML`). Pure. Output is always well-formed: every tag is
 * closed in order, and `&`, `<`, `>` (and `"` in attributes) are escaped everywhere else.
 * Discord renders Markdown itself, so it needs no conversion.
 */

/** Tags the converter may emit (all supported by Telegram's HTML parse mode). */
export const TELEGRAM_HTML_TAGS = ['b', 'i', 's', 'code', 'pre', 'a', 'blockquote', 'tg-spoiler'] as const;

const FENCE_RE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^\n]*$/;
const HEADING_RE = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/;
const QUOTE_RE = /^ {0,3}>\s?(.*)$/;
const BULLET_RE = /^(\s*)[-*+]\s+(.*)$/;
const LINK_RE = /^\[([^\]\n]+)\]\(((?:https?|tg|mailto):[^\s()]+)\)/;
/** Paired inline markers, longest first so `**` wins over `*`. */
const MARKERS: ReadonlyArray<{ marker: string; tag: string; wordBound: boolean }> = [
  { marker: '**', tag: 'b', wordBound: false },
  { marker: '__', tag: 'b', wordBound: true },
  { marker: '~~', tag: 's', wordBound: false },
  { marker: '||', tag: 'tg-spoiler', wordBound: false },
  { marker: '*', tag: 'i', wordBound: false },
  { marker: '_', tag: 'i', wordBound: true },
];

/** Escapes text for Telegram HTML: `&`, `<`, `>`. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * Converts a Markdown reply to Telegram HTML: fenced code → `<pre><code class="language-x">`,
 * inline code, bold, italic, strikethrough, spoilers, links (http, https, tg, mailto), headings
 * (bold), block quotes and bullet lists (•). Anything unrecognised stays literal text, escaped.
 */
export function markdownToTelegramHtml(markdown: string): string {
  const lines = markdown.split('\n');
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const fence = FENCE_RE.exec(lines[i]!);
    if (fence) {
      i = renderCodeBlock(lines, i, fence[1]!, fence[2]!, out);
      continue;
    }
    if (QUOTE_RE.test(lines[i]!)) {
      const quoted: string[] = [];
      for (; i < lines.length && QUOTE_RE.test(lines[i]!); i++) quoted.push(renderInline(QUOTE_RE.exec(lines[i]!)![1]!));
      out.push(`<blockquote>${quoted.join('\n')}</blockquote>`);
      continue;
    }
    out.push(renderLine(lines[i]!));
    i++;
  }
  return out.join('\n');
}

/** Renders inline Markdown (no block constructs) to Telegram HTML. */
export function renderInline(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const rendered = renderCodeSpan(text, i) ?? renderLink(text, i) ?? renderEmphasis(text, i);
    if (rendered) {
      out += rendered.html;
      i = rendered.end;
    } else {
      out += escapeHtml(text[i]!);
      i++;
    }
  }
  return out;
}

interface Rendered {
  html: string;
  /** Index just past the consumed source. */
  end: number;
}

function renderLine(line: string): string {
  const heading = HEADING_RE.exec(line);
  if (heading) return `<b>${renderInline(heading[1]!)}</b>`;
  const bullet = BULLET_RE.exec(line);
  if (bullet && !/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) return `${bullet[1]}• ${renderInline(bullet[2]!)}`;
  return renderInline(line);
}

/** Renders the code block opening at `start`; returns the index after its closing fence. */
function renderCodeBlock(lines: string[], start: number, marker: string, language: string, out: string[]): number {
  const body: string[] = [];
  let i = start + 1;
  for (; i < lines.length; i++) {
    const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[i]!);
    if (close && close[1]![0] === marker[0] && close[1]!.length >= marker.length) break;
    body.push(lines[i]!);
  }
  const code = escapeHtml(body.join('\n'));
  const open = language ? `<pre><code class="language-${escapeAttribute(language)}">` : '<pre><code>';
  out.push(`${open}${code}</code></pre>`);
  return i + 1;
}

function renderCodeSpan(text: string, at: number): Rendered | null {
  if (text[at] !== '`') return null;
  let ticks = 0;
  while (text[at + ticks] === '`') ticks++;
  const fence = '`'.repeat(ticks);
  let close = text.indexOf(fence, at + ticks);
  while (close !== -1 && text[close + ticks] === '`') close = text.indexOf(fence, close + ticks + 1);
  if (close === -1 || close === at + ticks) return null;
  return { html: `<code>${escapeHtml(text.slice(at + ticks, close))}</code>`, end: close + ticks };
}

function renderLink(text: string, at: number): Rendered | null {
  if (text[at] !== '[') return null;
  const match = LINK_RE.exec(text.slice(at));
  if (!match) return null;
  return { html: `<a href="${escapeAttribute(match[2]!)}">${renderInline(match[1]!)}</a>`, end: at + match[0].length };
}

function renderEmphasis(text: string, at: number): Rendered | null {
  for (const { marker, tag, wordBound } of MARKERS) {
    if (!text.startsWith(marker, at)) continue;
    const start = at + marker.length;
    if (start >= text.length || /\s/.test(text[start]!)) return null;
    if (wordBound && at > 0 && /[\p{L}\p{N}]/u.test(text[at - 1]!)) return null;
    const close = findCloser(text, start, marker, wordBound);
    if (close === -1) continue;
    return { html: `<${tag}>${renderInline(text.slice(start, close))}</${tag}>`, end: close + marker.length };
  }
  return null;
}

/** Index of the marker closing an emphasis opened before `from`, or -1. */
function findCloser(text: string, from: number, marker: string, wordBound: boolean): number {
  for (let j = text.indexOf(marker, from + 1); j !== -1; j = text.indexOf(marker, j + 1)) {
    if (/\s/.test(text[j - 1]!)) continue;
    const after = text[j + marker.length];
    // A single `*` or `_` that is part of a double marker is not a closer.
    if (marker.length === 1 && (after === marker || text[j - 1] === marker)) continue;
    if (wordBound && after !== undefined && /[\p{L}\p{N}]/u.test(after)) continue;
    if (text.slice(from, j).includes('\n')) return -1;
    return j;
  }
  return -1;
}

function escapeAttribute(value: string): string {
  return escapeHtml(value).replace(/"/g, '&quot;');
}
