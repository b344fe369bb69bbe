/**
 * Cutting a person's text safely. Pure. Every cut lands on a code-point boundary — never inside a
 * surrogate pair (half an emoji is a lone surrogate, which JSON.stringify writes as an escape that
 * Redis's Lua cjson rejects) — and on a grapheme boundary (a flag, a ZWJ family, a letter with its
 * accents) when one is within {@link GRAPHEME_SNAP_UNITS}.
 */

/** How far (UTF-16 units) a cut may move back to a grapheme boundary before it settles for a code point. */
export const GRAPHEME_SNAP_UNITS = 32;

const LONE_SURROGATE_RE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const REPLACEMENT = '\ufffd';
const segmenter = typeof Intl.Segmenter === 'function' ? new Intl.Segmenter(undefined, { granularity: 'grapheme' }) : undefined;
type WellFormedString = string & { toWellFormed?: () => string; isWellFormed?: () => boolean };

/** `text` with every lone surrogate replaced by U+FFFD (String.prototype.toWellFormed where Node has it). */
export function toWellFormedText(text: string): string {
  const native = (text as WellFormedString).toWellFormed;
  return typeof native === 'function' ? native.call(text) : text.replace(LONE_SURROGATE_RE, REPLACEMENT);
}

/** Whether `text` has no lone surrogate. */
export function isWellFormedText(text: string): boolean {
  const native = (text as WellFormedString).isWellFormed;
  if (typeof native === 'function') return native.call(text);
  LONE_SURROGATE_RE.lastIndex = 0;
  return !LONE_SURROGATE_RE.test(text);
}

/**
 * The cut position at or before UTF-16 index `index`: the start of the grapheme holding it when
 * that is at most {@link GRAPHEME_SNAP_UNITS} back, else the start of the code point holding it.
 */
export function cutBefore(text: string, index: number): number {
  if (index <= 0) return 0;
  if (index >= text.length) return text.length;
  const codePointStart = isLowAfterHigh(text, index) ? index - 1 : index;
  // A flag is two regional indicators, paired from the start of their run: count, do not segment a window.
  if (isRegionalIndicatorAt(text, codePointStart)) return regionalIndicatorsBefore(text, codePointStart) % 2 === 1 ? codePointStart - 2 : codePointStart;
  if (!segmenter) return codePointStart;
  // Segment a window only: a whole long text would be copied into ICU for one cut.
  const from = Math.max(0, codePointStart - GRAPHEME_SNAP_UNITS);
  const windowStart = from > 0 && isLowAfterHigh(text, from) ? from - 1 : from;
  const window = text.slice(windowStart, Math.min(text.length, index + GRAPHEME_SNAP_UNITS));
  const grapheme = segmenter.segment(window).containing(index - windowStart);
  const start = grapheme ? windowStart + grapheme.index : codePointStart;
  // A window start inside a long grapheme is no boundary: keep the code point.
  return start === windowStart && windowStart > 0 ? codePointStart : Math.min(start, codePointStart);
}

/** Whether `text` holds nothing a person could read: only white space and control characters (NUL, BEL, ESC…). */
export function isBlankText(text: string): boolean {
  return /^[\s\p{Cc}]*$/u.test(text);
}

/** `text` cut to at most `maxCodePoints` code points, on a boundary ({@link cutBefore}). */
export function truncateText(text: string, maxCodePoints: number): string {
  if (maxCodePoints <= 0) return '';
  let index = 0;
  for (let points = 0; index < text.length && points < maxCodePoints; points++) index += isHighAt(text, index) && isLowAfterHigh(text, index + 1) ? 2 : 1;
  return index >= text.length ? text : text.slice(0, cutBefore(text, index));
}

/**
 * An excerpt of about `maxCodePoints` code points around the first case-insensitive match of
 * `query` (the start when there is none), with `…` where text was left out on either side.
 */
export function excerptAround(text: string, query: string, maxCodePoints: number): string {
  if ([...text].length <= maxCodePoints) return text;
  const at = Math.max(0, query === '' ? 0 : text.toLowerCase().indexOf(query.toLowerCase()));
  const start = cutBefore(text, Math.max(0, at - Math.floor(maxCodePoints / 2)));
  const body = truncateText(text.slice(start), maxCodePoints);
  return `${start > 0 ? '…' : ''}${body}${start + body.length < text.length ? '…' : ''}`;
}

function isRegionalIndicatorAt(text: string, index: number): boolean {
  const low = text.charCodeAt(index + 1);
  return text.charCodeAt(index) === 0xd83c && low >= 0xdde6 && low <= 0xddff;
}

function regionalIndicatorsBefore(text: string, index: number): number {
  let count = 0;
  for (let i = index - 2; i >= 0 && isRegionalIndicatorAt(text, i); i -= 2) count++;
  return count;
}

function isHighAt(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code >= 0xd800 && code <= 0xdbff;
}

/** Whether a low surrogate at `index` completes a high one before it (a pair straddles `index`). */
function isLowAfterHigh(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code >= 0xdc00 && code <= 0xdfff && index > 0 && isHighAt(text, index - 1);
}

/**
 * Index of the first character of the text's tail of at most `maxChars` UTF-16 units, moved so the
 * tail never starts inside a surrogate pair (the tail may come out one unit shorter).
 */
export function tailStart(text: string, maxChars: number): number {
  const start = Math.max(0, text.length - Math.max(0, maxChars));
  return isLowSurrogateCode(text.charCodeAt(start)) ? start + 1 : start;
}

/** Index where the text's head of at most `maxChars` UTF-16 units ends, never inside a surrogate pair. */
export function headEnd(text: string, maxChars: number): number {
  const end = Math.min(text.length, Math.max(0, maxChars));
  return end < text.length && isLowSurrogateCode(text.charCodeAt(end)) ? end - 1 : end;
}

function isLowSurrogateCode(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
