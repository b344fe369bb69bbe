/**
 * Counts in plain words, pure: `1 message`, `2 messages`, `12,013 tokens` — every user-visible text
 * with a count goes through {@link countOf}, so no surface says "1 messages".
 */

/** Nouns whose plural is not `<noun>s`. */
const IRREGULAR: Readonly<Record<string, string>> = { reply: 'replies', summary: 'summaries', entry: 'entries' };

/** The plural of an English noun chatgate uses (`message` → `messages`, `reply` → `replies`). */
export function pluralOf(noun: string): string {
  return IRREGULAR[noun] ?? `${noun}s`;
}

/**
 * `n` with thousands separators and the noun in the right number: `countOf(1, 'message')` →
 * `1 message`, `countOf(4277, 'token')` → `4,277 tokens`. `plural` overrides the plural form.
 */
export function countOf(n: number, noun: string, plural?: string): string {
  const rounded = Math.round(n);
  return `${rounded.toLocaleString('en-US')} ${rounded === 1 ? noun : (plural ?? pluralOf(noun))}`;
}
