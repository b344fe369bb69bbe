import { isChatgateText, messageText, type ChatMessage } from './messages.js';
import { SUMMARY_PREFIX, withoutSummaryBlock } from './summary-block.js';

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
const TOKEN_RE = /\b[A-Za-z0-9][A-Za-z0-9_-]*[A-Za-z0-9]\b/g;
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
  for (const re of [URL_RE, EMAIL_RE, ISO_DATE_RE, PATH_RE, AMOUNT_RE, HASH_NUMBER_RE]) {
    rest = rest.replace(re, (match) => {
      const cleaned = re === URL_RE || re === AMOUNT_RE ? match.replace(/[.,;:!?]+$/, '') : match.trim();
      found.push(cleaned);
      return ' ';
    });
  }
  for (const match of rest.matchAll(TOKEN_RE)) {
    const token = match[0];
    if (isStrongToken(token)) found.push(token);
  }
  return [...new Set(found)];
}

/**
 * Adds the facts of every original message to the ledger (chatgate's own notes and summaries are
 * skipped). Later messages are newer. Returns the new ledger and clock; the inputs are not mutated.
 */
export function mineFacts(
  messages: readonly ChatMessage[],
  ledger: Readonly<Record<string, number>>,
  clock: number,
): { facts: Record<string, number>; clock: number } {
  const facts: Record<string, number> = { ...ledger };
  let now = clock;
  for (const message of messages) {
    const text = messageText(message);
    if (message.role === 'system' || isChatgateText(text)) continue;
    now += 1;
    // A message carrying an appended summary is mined without it: summaries are chatgate's own words.
    const found = text.includes(SUMMARY_PREFIX) ? extractFacts(withoutSummaryBlock(text)) : factsOfMessage(message);
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
  return Object.keys(ledger).sort((a, b) => ledger[b] - ledger[a] || (a < b ? -1 : a > b ? 1 : 0));
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
