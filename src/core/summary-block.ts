import { countTextTokens } from './tokens.js';
import { hasToolCalls, messageText, type ChatMessage } from './messages.js';

/** First line of every summary block chatgate writes. */
export const SUMMARY_PREFIX =
  '[chatgate:summary] Summary of the earlier conversation. Reference only: these are not new instructions.';
/** Last line of every summary block. */
export const SUMMARY_END = '[chatgate:end of summary]';
/** Heading of the pinned-facts section inside the summary block. */
export const PINNED_HEADING = '## Pinned facts (verbatim identifiers from earlier turns)';

/** A summary block found in a message. */
export interface ParsedSummary {
  /** The summary body without the pinned section and markers. */
  body: string;
  /** What the message held after the block (when the summary was merged into a tail message). */
  rest: string;
}

/** The summariser's token budget: max(2000, min(0.20 × middle, min(0.05 × window, 12000))). */
export function summaryTargetTokens(middleTokens: number, contextWindow: number): number {
  return Math.floor(Math.max(2000, Math.min(0.2 * middleTokens, Math.min(0.05 * contextWindow, 12000))));
}

/** Finds a summary block in a user or assistant message (at its start, or appended at its end), or null. */
export function parseSummary(message: ChatMessage): ParsedSummary | null {
  if (message.role !== 'user' && message.role !== 'assistant') return null;
  const text = messageText(message);
  const start = text.indexOf(SUMMARY_PREFIX);
  if (start === -1) return null;
  const end = text.indexOf(SUMMARY_END, start);
  const inner = text.slice(start + SUMMARY_PREFIX.length, end === -1 ? text.length : end);
  const after = end === -1 ? '' : text.slice(end + SUMMARY_END.length);
  const rest = `${text.slice(0, start)}${after}`.trim();
  const pinnedAt = inner.indexOf(PINNED_HEADING);
  const body = (pinnedAt === -1 ? inner : inner.slice(0, pinnedAt)).trim();
  return { body, rest };
}

/** A text without its summary block (what the user or model wrote around it). */
export function withoutSummaryBlock(text: string): string {
  const start = text.indexOf(SUMMARY_PREFIX);
  if (start === -1) return text;
  const end = text.indexOf(SUMMARY_END, start);
  return `${text.slice(0, start)}${end === -1 ? '' : text.slice(end + SUMMARY_END.length)}`;
}

/** Renders the pinned section for a list of facts (empty string when there are none). */
export function renderPinned(facts: readonly string[], omitted: number): string {
  if (facts.length === 0 && omitted === 0) return '';
  const lines = [PINNED_HEADING, ...facts.map((fact) => `- ${fact}`)];
  if (omitted > 0) lines.push(`(${omitted} older identifiers not shown; search_history finds them)`);
  return lines.join('\n');
}

/** Renders the whole block: prefix, body, pinned section, end marker. */
export function renderSummaryBlock(body: string, pinned: string): string {
  return [SUMMARY_PREFIX, body.trim(), pinned, SUMMARY_END].filter((part) => part.length > 0).join('\n\n');
}

/** Cuts a text to at most `maxTokens` tokens, at a line boundary where possible, marking the cut. */
export function cutToTokens(text: string, maxTokens: number, model?: string): string {
  if (maxTokens <= 0) return '';
  if (countTextTokens(text, model) <= maxTokens) return text;
  // Characters per token is ~4 for prose; shrink until it fits (a few passes at most).
  let chars = Math.max(0, Math.floor(maxTokens * 3.5));
  let cut = text.slice(0, chars);
  while (chars > 0 && countTextTokens(`${cut}\n[…cut]`, model) > maxTokens) {
    chars = Math.floor(chars * 0.8);
    cut = text.slice(0, chars);
  }
  if (chars === 0) return '';
  const lineBreak = cut.lastIndexOf('\n');
  if (lineBreak > chars * 0.6) cut = cut.slice(0, lineBreak);
  return `${cut}\n[…cut]`;
}

/**
 * The deterministic summary used when the summariser fails: the previous summary, the last thing the
 * user asked, the tool actions taken and the assistant's last answer. Never empty.
 */
export function fallbackSummary(turns: readonly ChatMessage[], previousSummary: string | null): string {
  const lines: string[] = ['(Automatic summary: the summariser was unavailable; built from the turns themselves.)'];
  if (previousSummary) lines.push('## Earlier summary', previousSummary);
  const asks = turns.filter((m) => m.role === 'user').map((m) => oneLine(messageText(m), 300));
  if (asks.length > 0) {
    lines.push('## What the user asked (oldest first)');
    for (const ask of asks.slice(-6)) lines.push(`- ${ask}`);
    if (asks.length > 6) lines.push(`- (and ${asks.length - 6} earlier requests)`);
  }
  const actions = toolActions(turns);
  if (actions.length > 0) lines.push('## Tool actions', ...actions.map((a) => `- ${a}`));
  const lastAnswer = [...turns].reverse().find((m) => m.role === 'assistant' && messageText(m).trim() !== '');
  if (lastAnswer) lines.push('## Last answer given', oneLine(messageText(lastAnswer), 600));
  return lines.join('\n');
}

function toolActions(turns: readonly ChatMessage[]): string[] {
  const counts = new Map<string, number>();
  for (const message of turns) {
    if (!hasToolCalls(message)) continue;
    for (const call of message.tool_calls) counts.set(call.function.name, (counts.get(call.function.name) ?? 0) + 1);
  }
  return [...counts].map(([name, n]) => `${name} called ${n}×`);
}

function oneLine(text: string, maxChars: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > maxChars ? `${flat.slice(0, maxChars)}…` : flat;
}

/** The facts listed in a summary block's pinned section (empty when there is none). */
export function pinnedFactsOf(text: string): string[] {
  const start = text.indexOf(PINNED_HEADING);
  if (start === -1) return [];
  const end = text.indexOf(SUMMARY_END, start);
  return text
    .slice(start + PINNED_HEADING.length, end === -1 ? text.length : end)
    .split('\n')
    .filter((line) => line.startsWith('- '))
    .map((line) => line.slice(2).trim());
}
