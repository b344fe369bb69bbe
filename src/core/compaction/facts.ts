import type { MessageMemos } from './message-memo.js';
import { messageText, type ChatMessage } from '../messages.js';
import type { FactContext, FoundFact, MessageScan, ShapeStrength } from './compaction-types.js';

// Order matters: the wider shapes (URLs, emails, paths) are taken out of the text before the
// narrower ones (ids, numbers) so that a URL's digits are not mined again as a number.
const URL_RE = /\bhttps?:\/\/[^\s<>"'`)\]}]+/g;
const EMAIL_RE = /\b[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\b/g;
const PATH_RE = /(?:(?<![\w/])(?:~|\.{1,2})?\/[\w.-]+(?:\/[\w.-]+)+\/?|\b[\w-]+(?:\/[\w.-]+)*\/[\w-]+\.[A-Za-z0-9]{1,6}\b|\b[A-Za-z]:\\(?:[\w .-]+\\)*[\w.-]+)/g;
const ISO_DATE_RE = /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b/g;
const CURRENCY_CODES = 'USD|EUR|GBP|JPY|CHF|CAD|AUD|CNY|INR|SEK|NOK|DKK|PLN|BRL';
const AMOUNT_RE = new RegExp(
  `(?:[$€£¥₹]\\s?\\d[\\d,]*(?:\\.\\d+)?|(?<![\\d.,])\\d[\\d,]*(?:\\.\\d+)?\\s?(?:${CURRENCY_CODES})\\b|\\b(?:${CURRENCY_CODES})\\s?\\d[\\d,]*(?:\\.\\d+)?)`,
  'g',
);
const HASH_NUMBER_RE = /(?<![\w&])#\d{2,}\b/g;
const DIGIT_RE = /\d/g;
const CURRENCY_CODE_RE = new RegExp(`(?:${CURRENCY_CODES})`);
/** The signs of AMOUNT_RE, each looked for with `includes` (a search, where a character class tests every character). */
const CURRENCY_SIGNS = ['$', '€', '£', '¥', '₹'];
/** Every fact holds a digit, a slash (paths, URLs) or an at sign (emails). */
const MAY_HOLD_FACTS_RE = /[\d/\\@]/;
const UNIT_LIKE_RE = /^\d+(?:[a-z]{1,3}|st|nd|rd|th)$/i;
const SECONDS_RE = /\d{2}:\d{2}:\d{2}/;
const EPOCH_RE = /^1[5-9]\d{8}(?:\d{3})?$/;
const LOG_LINE_RE = /^\s*(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?\d\d:\d\d:\d\d|\[?(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL)\b|at\s+\S+\s+\(|\d+\s*[|:]\s|[-+]{3}\s|@@\s|(?:const|let|var|function|def|class|import|from|return|if|for|while|public|private|fn|func)\b)/;
const CODE_TAIL_RE = /[;{}]\s*$/;
const AMOUNT_LABEL_RE = /[A-Za-z]{3,}\s*$/;

/** Shapes a fact can have, the wider ones first. */
type ShapeKind = 'url' | 'email' | 'date' | 'path' | 'amount' | 'hash' | 'token';

// Cheap guards, so a text is scanned by a shape's regex only when it may hold one.
const WIDE_SHAPES: ReadonlyArray<readonly [ShapeKind, RegExp, (text: string) => boolean]> = [
  ['url', URL_RE, (t) => t.includes('://')],
  ['email', EMAIL_RE, (t) => t.includes('@')],
  ['date', ISO_DATE_RE, mayHoldDate],
  ['path', PATH_RE, (t) => t.includes('/') || t.includes('\\')],
  ['amount', AMOUNT_RE, (t) => CURRENCY_SIGNS.some((sign) => t.includes(sign)) || (/[A-Z]{3}/.test(t) && CURRENCY_CODE_RE.test(t))],
  ['hash', HASH_NUMBER_RE, (t) => t.includes('#')],
];
const NO_FACTS: readonly string[] = Object.freeze([]);
const NO_FOUND: readonly FoundFact[] = Object.freeze([]);
const NO_CALLS: MessageScan['calls'] = Object.freeze([]);
/** The scan of a message without facts, shared: most messages hold none. */
const NOTHING_FOUND: MessageScan = Object.freeze({ text: NO_FOUND, calls: NO_CALLS });

/**
 * Extracts the strong identifiers of a text: ids mixing letters and digits, `#`-numbers, standalone
 * numbers of 5+ digits, paths, URLs, emails, currency amounts and ISO dates. Deterministic, without
 * duplicates.
 */
export function extractFacts(text: string): string[] {
  if (!MAY_HOLD_FACTS_RE.test(text)) return [];
  const found: string[] = [];
  scan(text, {
    found(fact) {
      found.push(fact);
    },
  });
  return [...new Set(found)];
}

/**
 * Like {@link extractFacts}, with what the engine needs to weigh each fact: the strength of its shape
 * and its context. `source` says how to read the text: a person's or the model's words (prose unless
 * inside a code block or a log/code line), or a tool's output (labelled values or bare tokens).
 */
export function scanFacts(text: string, source: 'words' | 'tool'): readonly FoundFact[] {
  if (!MAY_HOLD_FACTS_RE.test(text)) return NO_FOUND; // most messages: nothing to allocate
  const collector = new FactCollector(text, source);
  scan(text, collector);
  return collector.facts();
}

/** Scans a message's text (as words, or as tool output) and its tool-call arguments; once per message object in `memos`. */
export function scanMessage(message: ChatMessage, memos: MessageMemos): MessageScan {
  const memo = memos.of(message);
  if (memo.scan) return memo.scan;
  const text = scanFacts(messageText(message), message.role === 'tool' ? 'tool' : 'words');
  const calls = message.role === 'assistant' && message.tool_calls && message.tool_calls.length > 0
    ? message.tool_calls.map((call) => [call.function.name, scanFacts(call.function.arguments, 'words')] as const)
    : NO_CALLS;
  const scanned: MessageScan = text === NO_FOUND && calls === NO_CALLS ? NOTHING_FOUND : { text, calls };
  memo.scan = scanned;
  return scanned;
}

/**
 * The identifiers a message holds verbatim (its text and tool-call arguments), chatgate's own notes
 * included, the strongest shapes first. Extracted once per message object and remembered in `memos`.
 */
export function factsOfMessage(message: ChatMessage, memos: MessageMemos): readonly string[] {
  const memo = memos.of(message);
  if (memo.facts) return memo.facts;
  const { text, calls } = scanMessage(message, memos);
  const found = calls.length === 0 ? text : [...text, ...calls.flatMap(([, facts]) => facts)];
  let facts: readonly string[];
  if (found.length === 0) facts = NO_FACTS;
  else if (found.length === 1) facts = [found[0]!.fact];
  else facts = [...new Set([...found].sort(byStrength).map((f) => f.fact))];
  memo.facts = facts;
  return facts;
}

/** Strong shapes first, then labelled before prose before bare; otherwise in order of finding. */
function byStrength(a: FoundFact, b: FoundFact): number {
  return b.shape - a.shape || CONTEXT_RANK[b.context] - CONTEXT_RANK[a.context];
}

const CONTEXT_RANK: Record<FactContext, number> = { labelled: 2, prose: 1, bare: 0 };

/** Every identifier present verbatim somewhere in the messages. */
export function presentFacts(messages: readonly ChatMessage[], memos: MessageMemos): Set<string> {
  const present = new Set<string>();
  for (const message of messages) for (const fact of factsOfMessage(message, memos)) present.add(fact);
  return present;
}

/** A cheap look for `dddd-dd-`: dashes are rare, and `indexOf` finds them fast. */
function mayHoldDate(text: string): boolean {
  for (let i = text.indexOf('-'); i !== -1; i = text.indexOf('-', i + 1)) {
    if (i >= 4 && isDigit(text.charCodeAt(i - 1)) && isDigit(text.charCodeAt(i - 4)) && text.charCodeAt(i + 3) === 45) return true;
  }
  return false;
}

/** Receives each match of {@link scan} with its position in the text. */
interface FactSink {
  found(fact: string, kind: ShapeKind, at: number, end: number): void;
}

/** Runs every shape over the text, handing each match and its position to `sink` (callers test MAY_HOLD_FACTS_RE first). */
function scan(text: string, sink: FactSink): void {
  let rest = text;
  for (const [kind, re, mayHold] of WIDE_SHAPES) {
    if (!mayHold(rest)) continue; // cheap guard: most texts hold no URL, email, path or amount
    // Blanked with as many spaces as it had characters, so positions in `rest` stay those of `text`.
    rest = rest.replace(re, (match: string, ...args: unknown[]) => {
      const at = args[args.length - 2] as number;
      const fact = kind === 'url' || kind === 'amount' || kind === 'path' ? match.trim().replace(/[.,;:!?]+$/, '') : match.trim();
      if (fact) sink.found(fact, kind, at + match.indexOf(fact), at + match.indexOf(fact) + fact.length);
      return ' '.repeat(match.length);
    });
  }
  collectTokens(rest, sink);
}

/** Finds tokens holding a digit by expanding around each digit: far cheaper than a word regex. */
function collectTokens(text: string, sink: FactSink): void {
  const re = DIGIT_RE;
  re.lastIndex = 0;
  // `test` finds the next digit without building a match.
  while (re.test(text)) {
    let start = re.lastIndex - 1;
    let end = re.lastIndex;
    while (start > 0 && isTokenChar(text.charCodeAt(start - 1))) start--;
    while (end < text.length && isTokenChar(text.charCodeAt(end))) end++;
    re.lastIndex = end;
    while (start < end && isSeparator(text.charCodeAt(start))) start++;
    while (end > start && isSeparator(text.charCodeAt(end - 1))) end--;
    if (end > start) {
      const token = text.slice(start, end);
      if (isStrongToken(token)) sink.found(token, 'token', start, end);
    }
  }
}

function isSeparator(code: number): boolean {
  return code === 45 || code === 95;
}

function isTokenChar(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 45 || code === 95;
}

function isStrongToken(token: string): boolean {
  let digits = 0;
  let letters = 0;
  let upper = false;
  let separator = false;
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i);
    if (code >= 48 && code <= 57) digits++;
    else if (code >= 65 && code <= 90) {
      letters++;
      upper = true;
    } else if (code >= 97 && code <= 122) letters++;
    else separator = true;
  }
  if (digits === 0) return false;
  if (letters === 0) return !separator && token.length >= 5; // a standalone number of 5+ digits
  if (token.length < 5 || UNIT_LIKE_RE.test(token)) return false;
  // Version-like or encoding-like words with a single digit (gpt-4o, utf8) are weak: need 2+ digits.
  return digits >= 2 || (!separator && upper);
}

/** The strength of a fact's shape: strong ids, medium numbers and paths, weak machine noise. */
function shapeOf(fact: string, kind: ShapeKind, text: string, at: number, end: number, lines: LineReader): ShapeStrength {
  switch (kind) {
    case 'url':
    case 'email':
    case 'amount':
    case 'hash':
      return 2;
    case 'date':
      return SECONDS_RE.test(fact) ? 0 : 2;
    case 'path':
      return lines.inMachineText(at) ? 1 : 2;
    case 'token':
      return tokenShape(fact, text, at, end);
  }
}

function tokenShape(token: string, text: string, at: number, end: number): ShapeStrength {
  // A number with a dot next to it is a decimal, a version or an address part, not an id.
  const after = text.charCodeAt(end);
  const before = text.charCodeAt(at - 1);
  if ((after === 46 && isDigit(text.charCodeAt(end + 1))) || (before === 46 && isDigit(text.charCodeAt(at - 2)))) return 0;
  if (after === 58 && isDigit(text.charCodeAt(end + 1))) return 0; // line:column, host:port
  if (isHashLike(token)) return 0; // a hash or request id
  const classes = charClasses(token);
  const lower = (classes & LOWER) !== 0;
  const dash = (classes & DASH) !== 0;
  if (lower && (classes & (UNDERSCORE | CAMEL)) !== 0 && !dash) return 0; // code identifier
  if ((classes & UPPER) === 0 && !lower) return token.length >= 8 && !EPOCH_RE.test(token) ? 2 : 1; // long numbers are account, phone, tracking ids
  if ((classes & UPPER) === 0) return dash ? 2 : 1; // lowercase words with digits: user42
  return 2;
}

// What a token (letters, digits, `-`, `_`) holds, as bits: read in one pass, not by five regexes.
const LOWER = 1;
const UPPER = 2;
const UNDERSCORE = 4;
const DASH = 8;
/** A lowercase letter right before an uppercase one (camelCase). */
const CAMEL = 16;

function charClasses(token: string): number {
  let classes = 0;
  let previousLower = false;
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i);
    const isLower = code >= 97 && code <= 122;
    if (isLower) classes |= LOWER;
    else if (code >= 65 && code <= 90) classes |= previousLower ? UPPER | CAMEL : UPPER;
    else if (code === 95) classes |= UNDERSCORE;
    else if (code === 45) classes |= DASH;
    previousLower = isLower;
  }
  return classes;
}

/**
 * A hash or request id: after an optional prefix of 1–8 letters and `-` or `_`, at least 7 hex
 * digits holding both a letter and a digit (`req-7f3a9c21e`, `deadbeef42`).
 */
function isHashLike(token: string): boolean {
  let letters = 0;
  while (letters < token.length && isLetter(token.charCodeAt(letters))) letters++;
  const separator = token.charCodeAt(letters);
  const start = letters >= 1 && letters <= 8 && (separator === 45 || separator === 95) ? letters + 1 : 0;
  if (token.length - start < 7) return false;
  let hexLetter = false;
  let digit = false;
  for (let i = start; i < token.length; i++) {
    const code = token.charCodeAt(i) | 0x20; // lowercase a letter; a digit stays a digit
    if (code >= 48 && code <= 57) digit = true;
    else if (code >= 97 && code <= 102) hexLetter = true;
    else return false;
  }
  return hexLetter && digit;
}

function isLetter(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** Whether a fact at `at` was said in prose, as a labelled value, or stood bare in code, logs or output. */
function contextOf(text: string, at: number, kind: ShapeKind, source: 'words' | 'tool', lines: LineReader): FactContext {
  if (lines.inMachineText(at)) return 'bare';
  if (source === 'words') return 'prose';
  if (followsLabel(text, at)) return 'labelled';
  if (kind === 'amount' && AMOUNT_LABEL_RE.test(text.slice(Math.max(0, at - 24), at))) return 'labelled'; // "total €1,299.00"
  return 'bare';
}

/** True when `key:` or `key=` (quotes and spaces allowed) stands right before `at`: `"invoice": "INV-1"`. */
function followsLabel(text: string, at: number): boolean {
  let i = at - 1;
  while (i >= 0 && (text[i] === ' ' || text[i] === '"' || text[i] === "'")) i--;
  if (i < 0 || (text[i] !== ':' && text[i] !== '=')) return false;
  i--;
  while (i >= 0 && (text[i] === ' ' || text[i] === '"' || text[i] === "'")) i--;
  const code = text.charCodeAt(i);
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || (code >= 48 && code <= 57) || code === 95;
}

function strongerContext(a: FactContext, b: FactContext): FactContext {
  const rank: Record<FactContext, number> = { bare: 0, labelled: 1, prose: 2 };
  return rank[a] >= rank[b] ? a : b;
}

/** Collects the facts {@link scan} finds in one text, each with its shape and context, merged by fact. */
class FactCollector implements FactSink {
  private readonly byFact = new Map<string, FoundFact>();
  private lines: LineReader | null = null;

  constructor(private readonly text: string, private readonly source: 'words' | 'tool') {}

  found(fact: string, kind: ShapeKind, at: number, end: number): void {
    this.lines ??= new LineReader(this.text, this.source);
    const shape = shapeOf(fact, kind, this.text, at, end, this.lines);
    const context = contextOf(this.text, at, kind, this.source, this.lines);
    const known = this.byFact.get(fact);
    if (!known) this.byFact.set(fact, { fact, shape, context });
    else this.byFact.set(fact, { fact, shape: Math.max(known.shape, shape) as ShapeStrength, context: strongerContext(known.context, context) });
  }

  facts(): readonly FoundFact[] {
    return this.byFact.size === 0 ? NO_FOUND : [...this.byFact.values()];
  }
}

/** Answers, for a position in a text, whether it lies in a code block or on a log or code line. */
class LineReader {
  private fences: Array<[number, number]> | null = null;
  private multiline: boolean | null = null;
  // The last line asked about and its answer: a line often holds several facts.
  private lineStart = -1;
  private lineIsMachine = false;

  constructor(private readonly text: string, private readonly source: 'words' | 'tool') {}

  /** True inside a code block, on a log line, or (in words) on a line of code; JSON output is data, not code. */
  inMachineText(at: number): boolean {
    if (this.inFence(at)) return true;
    this.multiline ??= this.text.includes('\n');
    const start = this.multiline ? this.text.lastIndexOf('\n', at - 1) + 1 : 0;
    if (start !== this.lineStart) {
      this.lineStart = start;
      this.lineIsMachine = this.isMachineLine(start);
    }
    return this.lineIsMachine;
  }

  private isMachineLine(start: number): boolean {
    let end = this.multiline ? this.text.indexOf('\n', start) : -1;
    if (end === -1) end = this.text.length;
    const line = this.text.slice(start, Math.min(end, start + 400));
    if (LOG_LINE_RE.test(line)) return true;
    return this.source === 'words' && CODE_TAIL_RE.test(line);
  }

  private inFence(at: number): boolean {
    if (this.fences === null) this.fences = fenceRanges(this.text);
    for (const [from, to] of this.fences) if (at >= from && at < to) return true;
    return false;
  }
}

function fenceRanges(text: string): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let open = -1;
  for (let i = text.indexOf('```'); i !== -1; i = text.indexOf('```', i + 3)) {
    if (open === -1) open = i;
    else {
      ranges.push([open, i]);
      open = -1;
    }
  }
  if (open !== -1) ranges.push([open, text.length]);
  return ranges;
}
