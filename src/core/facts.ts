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
    let token = text.slice(start, end);
    token = token.replace(/^[-_]+|[-_]+$/g, '');
    if (token.length > 0 && isStrongToken(token)) found.push(token);
  }
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
  const found: string[] = [];
  const text = messageText(message);
  if (text) found.push(...extractFacts(text));
  if (message.role === 'assistant' && message.tool_calls) {
    for (const call of message.tool_calls) found.push(...extractFacts(call.function.arguments));
  }
  const facts = [...new Set(found)];
  factCache.set(message, facts);
  return facts;
}

/** Every identifier present verbatim somewhere in the messages. */
export function presentFacts(messages: readonly ChatMessage[]): Set<string> {
  const present = new Set<string>();
  for (const message of messages) for (const fact of factsOfMessage(message)) present.add(fact);
  return present;
}

/** Facts of the ledger, newest first (ties broken by the fact itself, for determinism). */
export function factsNewestFirst(ledger: Readonly<Record<string, number>>): string[] {
  return Object.entries(ledger)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([fact]) => fact);
}

function isStrongToken(token: string): boolean {
  const hasDigit = /\d/.test(token);
  if (!hasDigit) return false;
  if (/^\d+$/.test(token)) return token.length >= 5;
  if (!/[A-Za-z]/.test(token)) return false;
  if (token.length < 5 || UNIT_LIKE_RE.test(token)) return false;
  // Version-like or encoding-like words with a single digit (gpt-4o, utf8) are weak: need 2+ digits.
  return (token.match(/\d/g) ?? []).length >= 2 || /[-_]/.test(token) === false && /[A-Z]/.test(token);
}

function boundLedger(facts: Record<string, number>): Record<string, number> {
  const keys = Object.keys(facts);
  if (keys.length <= MAX_LEDGER_FACTS) return facts;
  const kept: Record<string, number> = {};
  for (const key of factsNewestFirst(facts).slice(0, MAX_LEDGER_FACTS)) kept[key] = facts[key];
  return kept;
}
