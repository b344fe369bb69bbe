import { isChatgateText, messageText, type ChatMessage } from './messages.js';
import { withoutSummaryBlock } from './summary-block.js';

/** Most facts a ledger keeps; beyond this the least recently seen are forgotten. */
export const MAX_LEDGER_FACTS = 2000;

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
const DIGITS_RE = /\d+/g;
const CURRENCY_CODE_RE = new RegExp(`(?:${CURRENCY_CODES})`);
// Cheap guards, so a text is scanned by a shape's regex only when it may hold one.
const WIDE_SHAPES: ReadonlyArray<readonly [RegExp, (text: string) => boolean]> = [
  [URL_RE, (t) => t.includes('://')],
  [EMAIL_RE, (t) => t.includes('@')],
  [ISO_DATE_RE, (t) => t.includes('-') && /\d{4}-\d\d-/.test(t)],
  [PATH_RE, (t) => t.includes('/') || t.includes('\\')],
  [AMOUNT_RE, (t) => /[$€£¥₹]/.test(t) || (/[A-Z]{3}/.test(t) && CURRENCY_CODE_RE.test(t))],
  [HASH_NUMBER_RE, (t) => t.includes('#')],
];
const UNIT_LIKE_RE = /^\d+(?:[a-z]{1,3}|st|nd|rd|th)$/i;
const factCache = new WeakMap<ChatMessage, readonly string[]>();
const NO_FACTS: readonly string[] = Object.freeze([]);

/**
 * Extracts the strong identifiers of a text: ids mixing letters and digits, `#`-numbers, standalone
 * numbers of 5+ digits, paths, URLs, emails, currency amounts and ISO dates. Deterministic, in order
 * of first appearance, without duplicates.
 */
export function extractFacts(text: string): string[] {
  const found: string[] = [];
  let rest = text;
  for (const [re, mayHold] of WIDE_SHAPES) {
    if (!mayHold(rest)) continue; // cheap guard: most texts hold no URL, email, path or amount
    rest = rest.replace(re, (match) => {
      found.push(re === URL_RE || re === AMOUNT_RE ? match.replace(/[.,;:!?]+$/, '') : match.trim());
      return ' ';
    });
  }
  collectTokens(rest, found);
  return [...new Set(found)];
}

/** Finds tokens holding a digit by expanding around each digit run: far cheaper than a word regex. */
function collectTokens(text: string, found: string[]): void {
  DIGITS_RE.lastIndex = 0;
  let match: RegExpExecArray | null;
  while ((match = DIGITS_RE.exec(text)) !== null) {
    let start = match.index;
    let end = start + match[0].length;
    while (start > 0 && isTokenChar(text.charCodeAt(start - 1))) start--;
    while (end < text.length && isTokenChar(text.charCodeAt(end))) end++;
    DIGITS_RE.lastIndex = end;
    while (start < end && isSeparator(text.charCodeAt(start))) start++;
    while (end > start && isSeparator(text.charCodeAt(end - 1))) end--;
    if (end > start) {
      const token = text.slice(start, end);
      if (isStrongToken(token)) found.push(token);
    }
  }
}

function isSeparator(code: number): boolean {
  return code === 45 || code === 95;
}

function isTokenChar(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 45 || code === 95;
}

/**
 * Adds the facts of every original message to the ledger (chatgate's own notes and summaries are
 * skipped; `summaryIndex` names the message that carries the summary block). Later messages are newer.
 * Returns the new ledger and clock; the inputs are not mutated.
 */
export function mineFacts(
  messages: readonly ChatMessage[],
  ledger: Readonly<Record<string, number>>,
  clock: number,
  summaryIndex = -1,
): { facts: Record<string, number>; clock: number } {
  const facts: Record<string, number> = { ...ledger };
  let now = clock;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message.role === 'system') continue;
    const text = messageText(message);
    if (isChatgateText(text)) continue;
    now += 1;
    // The message carrying the summary is mined without it: summaries are chatgate's own words.
    const found = i === summaryIndex ? extractFacts(withoutSummaryBlock(text)) : factsOfMessage(message);
    for (const fact of found) facts[fact] = now;
  }
  return { facts: boundLedger(facts), clock: now };
}

/**
 * The identifiers a message holds verbatim (its text and tool-call arguments), chatgate's own notes
 * included. Extracted once per message object and remembered.
 */
export function factsOfMessage(message: ChatMessage): readonly string[] {
  const cached = factCache.get(message);
  if (cached) return cached;
  const text = messageText(message);
  let facts: readonly string[] = text ? extractFacts(text) : NO_FACTS;
  if (message.role === 'assistant' && message.tool_calls) {
    const found = [...facts];
    for (const call of message.tool_calls) found.push(...extractFacts(call.function.arguments));
    facts = [...new Set(found)];
  }
  factCache.set(message, facts);
  return facts;
}

/** Every identifier present verbatim somewhere in the messages. */
export function presentFacts(messages: readonly ChatMessage[]): Set<string> {
  const present = new Set<string>();
  for (const message of messages) for (const fact of factsOfMessage(message)) present.add(fact);
  return present;
}

/** Facts of the ledger that `keep` accepts, newest first (ties broken by the fact itself, for determinism). */
export function factsNewestFirst(ledger: Readonly<Record<string, number>>, keep: (fact: string) => boolean = () => true): string[] {
  return Object.entries(ledger)
    .filter(([fact]) => keep(fact))
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([fact]) => fact);
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

/** Keeps the newest MAX_LEDGER_FACTS facts: a numeric cut-off, ties broken by the fact itself. */
function boundLedger(facts: Record<string, number>): Record<string, number> {
  const entries = Object.entries(facts);
  if (entries.length <= MAX_LEDGER_FACTS) return facts;
  const seen = Float64Array.from(entries, ([, clock]) => clock).sort();
  const cutoff = seen[seen.length - MAX_LEDGER_FACTS];
  const kept: Record<string, number> = {};
  const atCutoff: string[] = [];
  for (const [fact, clock] of entries) {
    if (clock > cutoff) kept[fact] = clock;
    else if (clock === cutoff) atCutoff.push(fact);
  }
  atCutoff.sort();
  for (const fact of atCutoff.slice(0, MAX_LEDGER_FACTS - Object.keys(kept).length)) kept[fact] = cutoff;
  return kept;
}
