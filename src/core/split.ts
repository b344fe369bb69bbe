/**
 * Reply splitting: cut a Markdown reply into chunks that fit a platform's message limit, at line
 * or word boundaries, closing an open code fence at the end of a chunk and reopening it at the
 * start of the next. Pure.
 */

import { cutBefore, toWellFormedText, truncateText } from './text.js';

/** How a limit is measured: UTF-16 code units (Telegram) or Unicode code points (Discord). */
export type SplitUnit = 'utf16' | 'codepoints';

/** Options of {@link splitMessage}. */
export interface SplitOptions {
  /** Longest chunk, in `unit`s. Must be ≥ {@link MIN_SPLIT_LIMIT}. */
  limit: number;
  /** Default `utf16`. */
  unit?: SplitUnit;
}

/** One chunk with what the splitter added around it (so callers and tests can undo it). */
export interface SplitChunk {
  text: string;
  /** The fence line prepended because the chunk continues a code block (`"```ts"`), if any. */
  reopenedFence?: string;
  /** The fence marker appended because the code block continues in the next chunk, if any. */
  closedFence?: string;
}

/** A chunk in both renderings: `formatted` (absent when it cannot fit once rendered) and `plain`. */
export interface PlannedChunk {
  /** The chunk rendered for the platform (e.g. Telegram HTML); absent → send `plain`. */
  formatted?: string;
  /** The Markdown source of the chunk, sent as literal text when formatting is rejected. */
  plain: string;
}

/** Smallest accepted limit: room for a reopened fence, its closer and some text. */
export const MIN_SPLIT_LIMIT = 32;

/** Longest fence info string carried over when a code block is reopened. */
const MAX_REOPEN_INFO = 20;
const FENCE_RE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/** Length of `text` in `unit`s. */
export function measureText(text: string, unit: SplitUnit = 'utf16'): number {
  if (unit === 'utf16') return text.length;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/** Splits `text` into chunk strings of at most `limit` units. See {@link splitChunks}. */
export function splitMessage(text: string, options: SplitOptions): string[] {
  return splitChunks(text, options).map((chunk) => chunk.text);
}

/**
 * Splits `text` into chunks of at most `options.limit` units, preferring line boundaries, then
 * whitespace, then a hard cut (never inside a surrogate pair). A code block cut in two is closed
 * at the end of one chunk and reopened (same fence, info string) at the start of the next.
 * Whitespace-only chunks are dropped. `@throws` RangeError when `limit` < {@link MIN_SPLIT_LIMIT}.
 */
export function splitChunks(text: string, options: SplitOptions): SplitChunk[] {
  const limit = options.limit;
  if (!Number.isInteger(limit) || limit < MIN_SPLIT_LIMIT) {
    throw new RangeError(`\`limit\` must be an integer ≥ ${MIN_SPLIT_LIMIT} (got ${limit})`);
  }
  const splitter = new Splitter(limit, options.unit ?? 'utf16');
  // Half an emoji (from a model answer) would make the platform refuse the whole chunk: U+FFFD instead.
  for (const line of toWellFormedText(text).split('\n')) splitter.addLine(line);
  return splitter.finish();
}

/**
 * Splits Markdown and renders each chunk with `render`; a chunk whose rendering is longer than
 * the limit is split again, smaller, until it fits (or, as a last resort, is sent plain).
 */
export function planChunks(markdown: string, options: SplitOptions & { render?: (markdown: string) => string }): PlannedChunk[] {
  const unit = options.unit ?? 'utf16';
  const render = options.render ?? ((source: string) => source);
  const planned: PlannedChunk[] = [];
  const visit = (source: string, limit: number, depth: number): void => {
    for (const chunk of splitMessage(source, { limit, unit })) {
      const formatted = render(chunk);
      const size = measureText(formatted, unit);
      if (size <= options.limit) {
        planned.push({ formatted, plain: chunk });
        continue;
      }
      const smaller = Math.floor((limit * options.limit * 0.9) / size);
      if (depth < 4 && smaller >= MIN_SPLIT_LIMIT && smaller < limit) visit(chunk, smaller, depth + 1);
      else planned.push({ plain: chunk });
    }
  };
  visit(markdown, options.limit, 0);
  return planned;
}

interface OpenFence {
  /** The fence characters, e.g. "```" or "~~~~". */
  marker: string;
  /** The line used to reopen it, e.g. "```ts". */
  reopenLine: string;
}

/** Accumulates lines into chunks, tracking whether a code fence is open. */
class Splitter {
  private readonly chunks: SplitChunk[] = [];
  private lines: string[] = [];
  private size = 0;
  private fence: OpenFence | null = null;
  private reopened: string | undefined;

  constructor(
    private readonly limit: number,
    private readonly unit: SplitUnit,
  ) {}

  addLine(line: string): void {
    let rest = line;
    for (;;) {
      const next = nextFence(this.fence, rest);
      const added = (this.lines.length > 0 ? 1 : 0) + measureText(rest, this.unit);
      if (this.size + added + this.closerSize(next) <= this.limit) {
        this.push(rest, added, next);
        return;
      }
      if (this.hasContent()) {
        this.flush();
        continue;
      }
      if (this.dropBlankLines()) continue;
      // The line alone does not fit: cut a piece that does, push it, start a new chunk.
      const room = this.limit - this.size - (this.lines.length > 0 ? 1 : 0) - this.closerSize(this.fence);
      const [piece, remainder] = cutLine(rest, room, this.unit);
      this.push(piece, (this.lines.length > 0 ? 1 : 0) + measureText(piece, this.unit), this.fence);
      this.flush();
      if (remainder === '') return;
      rest = remainder;
    }
  }

  finish(): SplitChunk[] {
    if (this.hasContent()) this.emit(undefined);
    return this.chunks;
  }

  private push(line: string, added: number, fence: OpenFence | null): void {
    this.lines.push(line);
    this.size += added;
    this.fence = fence;
  }

  /** Drops whitespace-only lines of a chunk without content; false when there were none. */
  private dropBlankLines(): boolean {
    const keep = this.reopened === undefined ? 0 : 1;
    if (this.lines.length <= keep) return false;
    this.lines = this.lines.slice(0, keep);
    this.size = keep === 1 ? measureText(this.lines[0]!, this.unit) : 0; // keep ≤ lines.length
    return true;
  }

  private closerSize(fence: OpenFence | null): number {
    return fence ? 1 + measureText(fence.marker, this.unit) : 0;
  }

  /** Whether the chunk holds more than a reopened fence line. */
  private hasContent(): boolean {
    const body = this.reopened === undefined ? this.lines : this.lines.slice(1);
    return body.some((line) => line.trim() !== '');
  }

  private flush(): void {
    const fence = this.fence;
    this.emit(fence?.marker);
    this.lines = [];
    this.size = 0;
    this.reopened = undefined;
    if (fence) {
      this.lines.push(fence.reopenLine);
      this.size = measureText(fence.reopenLine, this.unit);
      this.reopened = fence.reopenLine;
    }
  }

  private emit(closer: string | undefined): void {
    if (!this.hasContent()) return;
    const chunk: SplitChunk = { text: this.lines.join('\n') + (closer ? `\n${closer}` : '') };
    if (this.reopened !== undefined) chunk.reopenedFence = this.reopened;
    if (closer) chunk.closedFence = closer;
    this.chunks.push(chunk);
  }
}

/** The fence state after `line`, given the state before it (CommonMark-style fences). */
function nextFence(open: OpenFence | null, line: string): OpenFence | null {
  const match = FENCE_RE.exec(line);
  if (!match) return open;
  const marker = match[1]!; // the regex's groups always match
  const info = match[2]!.trim();
  if (open === null) {
    if (marker[0] === '`' && info.includes('`')) return null;
    return { marker, reopenLine: marker + truncateText(info, MAX_REOPEN_INFO) };
  }
  const closes = marker[0] === open.marker[0] && marker.length >= open.marker.length && info === '';
  return closes ? null : open;
}

/**
 * Cuts `line` into a first piece of at most `room` units and the remainder: at the last
 * whitespace when there is one in the second half, else a hard cut outside surrogate pairs (and
 * outside graphemes, see `cutBefore`).
 */
function cutLine(line: string, room: number, unit: SplitUnit): [string, string] {
  let end = 0;
  let units = 0;
  while (end < line.length) {
    const step = isPairAt(line, end) ? 2 : 1;
    const cost = unit === 'utf16' ? step : 1;
    if (units + cost > room) break;
    units += cost;
    end += step;
  }
  if (end >= line.length) return [line, ''];
  // Back to a grapheme boundary (a flag, a ZWJ family) when one is near; a whole grapheme over the room is cut at a code point.
  end = cutBefore(line, end) || end;
  if (end === 0) end = isPairAt(line, 0) ? 2 : 1;
  const space = lastWhitespace(line, end);
  if (space > end / 2) return [line.slice(0, space), line.slice(space + 1)];
  return [line.slice(0, end), line.slice(end)];
}

function lastWhitespace(line: string, before: number): number {
  for (let i = before; i > 0; i--) {
    if (line[i] === ' ' || line[i] === '\t') return i;
  }
  return -1;
}

/** Whether a surrogate pair (one code point, two code units) starts at `index`. */
function isPairAt(text: string, index: number): boolean {
  const high = text.charCodeAt(index);
  const low = text.charCodeAt(index + 1);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
}
