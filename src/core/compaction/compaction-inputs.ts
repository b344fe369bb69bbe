import { type CompactionState, FactOrigin, type FactLedger, type NoteTools } from './compaction-types.js';
import { isSummaryAck } from './assemble.js';
import { mineMessages, minedFactsOf, orderBySalience, salienceOf, LOW_SALIENCE } from './fact-ledger.js';
import { extractFacts } from './facts.js';
import { hasToolCalls, isChatgateText, messageText, type ChatMessage } from '../messages.js';
import type { MessageMemos } from './message-memo.js';
import { cutChars, hashText, type LocatedSummary } from './summary-block.js';
import type { Layout } from './layout.js';

/** Most facts a summary request asks the summariser to keep verbatim. */
export const MUST_KEEP_MAX = 30;
/** Noise-like facts (bare or labelled values seen once in output) the pinned section lists before the room left is filled. */
export const LOW_PIN_LINES = 8;
/** Share of the pinned section's cap the noise-like facts past {@link LOW_PIN_LINES} may take, all of them or none. */
export const NOISE_FILL_SHARE = 0.2;
/** User messages the automatic focus is taken from, and the characters kept of each. */
const AUTO_FOCUS_MESSAGES = 3;
const AUTO_FOCUS_CHARS = 240;

/**
 * Mines what is new in a history into the state's ledger. Between compactions a history only grows at
 * its end, so only the messages after the recorded watermark are mined (as fresh: their sightings count
 * as uses). A history that does not match the watermark is mined whole, refreshing what is known.
 */
export function mineHistory(messages: readonly ChatMessage[], state: CompactionState, summary: LocatedSummary | null, noteTools: NoteTools, memos: MessageMemos): CompactionState {
  const aligned = watermarkHolds(messages, state.mined);
  const from = aligned ? (state.mined?.count ?? 0) : 0;
  const fresh = aligned || state.mined === null;
  const slice = from === 0 ? messages : messages.slice(from);
  const summaryIndex = summary && summary.index >= from ? summary.index - from : -1;
  const mined = mineMessages(slice, state.facts, state, { fresh, noteTools, memos, summaryIndex, summaryRest: summary?.rest });
  return { ...state, facts: mined.facts, ...mined.clock, mined: watermarkOf(messages) };
}

/** The watermark of a history: its length and the hash of its last message. */
export function watermarkOf(messages: readonly ChatMessage[]): { count: number; hash: string } | null {
  const last = messages.at(-1);
  return last ? { count: messages.length, hash: hashMessage(last) } : null;
}

/** Whether {@link middleTurns} would give anything, without building it. */
export function hasMiddleTurns(messages: readonly ChatMessage[], layout: Layout, summary: LocatedSummary | null): boolean {
  for (let i = layout.headEnd; i < layout.tailStart; i++) if (middleTurnAt(messages, i, summary) !== null) return true;
  return false;
}

/** The messages between head and tail that the summariser gets: the old summary and its acknowledgement excluded, a merged remainder kept. */
export function middleTurns(messages: readonly ChatMessage[], layout: Layout, summary: LocatedSummary | null): ChatMessage[] {
  const turns: ChatMessage[] = [];
  for (let i = layout.headEnd; i < layout.tailStart; i++) {
    const turn = middleTurnAt(messages, i, summary);
    if (turn !== null) turns.push(turn);
  }
  return turns;
}

/**
 * The most salient ledger facts that occur in the turns being compacted (`messages[from, to)`) or in the
 * previous summary and that the rest of the request does not already hold: the summariser is asked to
 * keep them verbatim. `memos` remembers each message's facts.
 */
export function mustKeepFacts(messages: readonly ChatMessage[], from: number, to: number, previousBody: string | null, ledger: Readonly<FactLedger>, present: ReadonlySet<string>, memos: MessageMemos): string[] {
  // Only facts that qualify are collected: the middle of a long history names thousands that do not.
  const keep = new Set<string>();
  const consider = (fact: string) => {
    const record = ledger[fact];
    if (record !== undefined && !present.has(fact) && salienceOf(record) >= LOW_SALIENCE) keep.add(fact);
  };
  for (let i = from; i < to; i++) for (const [fact] of minedFactsOf(messages[i]!, memos)) consider(fact);
  if (previousBody) for (const fact of extractFacts(previousBody)) consider(fact);
  return orderBySalience([...keep], (fact) => ledger[fact]!).slice(0, MUST_KEEP_MAX);
}

/** What the conversation is about now: the last few user messages, one line each. */
export function autoFocusOf(messages: readonly ChatMessage[]): string | undefined {
  const asks: string[] = [];
  for (let i = messages.length - 1; i >= 0 && asks.length < AUTO_FOCUS_MESSAGES; i--) {
    const message = messages[i]!;
    if (message.role !== 'user') continue;
    const text = messageText(message).replace(/\s+/g, ' ').trim();
    if (text && !isChatgateText(text)) asks.unshift(cutChars(text, AUTO_FOCUS_CHARS));
  }
  return asks.length > 0 ? asks.join(' / ') : undefined;
}

/** The latest user request among the turns being compacted, or null. */
export function latestRequestOf(turns: readonly ChatMessage[]): string | null {
  for (let i = turns.length - 1; i >= 0; i--) {
    const message = turns[i]!;
    if (message.role !== 'user') continue;
    const text = messageText(message).trim();
    if (text && !isChatgateText(text)) return text;
  }
  return null;
}

/**
 * Chooses the pinned section: the ledger facts missing from the request, most salient first, within
 * `capTokens`. Notes are always listed. Noise-like facts get {@link LOW_PIN_LINES} lines once every
 * stronger fact has one; the rest too when they all fit in the room the cap leaves (at most
 * {@link NOISE_FILL_SHARE} of it): a small session keeps every fact, a noisy one a small section.
 * Weak shapes (timestamps, code names, hashes) never. `lineTokens` gives a pinned line's tokens.
 * Returns the facts and how many missing ones were left out.
 */
export function selectPinned(ledger: Readonly<FactLedger>, isPresent: (fact: string) => boolean, capTokens: number, lineTokens: (fact: string) => number): { pinned: string[]; omitted: number } {
  const missing = orderBySalience(Object.keys(ledger).filter((fact) => !isPresent(fact)), (fact) => ledger[fact]!);
  const pinned: string[] = [];
  const later: string[] = [];
  let used = 0;
  let low = 0;
  for (const fact of missing) {
    const record = ledger[fact]!;
    if (record[2] === FactOrigin.note) {
      pinned.push(fact);
      used += lineTokens(fact);
      continue;
    }
    const weak = salienceOf(record) < LOW_SALIENCE;
    // A weak shape below the floor (a clock's timestamp, a request id, a code name) is never worth a line.
    if (weak && record[4] === 0) continue;
    if (weak && low >= LOW_PIN_LINES) {
      later.push(fact); // room permitting, once every stronger fact has its line
      continue;
    }
    const cost = lineTokens(fact);
    if (used + cost > capTokens) continue; // a shorter one may still fit
    used += cost;
    if (weak) low++;
    pinned.push(fact);
  }
  // A small session's remaining noise-like facts all fit in the room left: then they are pinned (most
  // salient first). A noisy session's do not: its section stays at the allowance.
  const room = Math.min(capTokens - used, Math.floor(NOISE_FILL_SHARE * capTokens));
  const costs = later.map((fact) => lineTokens(fact));
  if (costs.reduce((sum, cost) => sum + cost, 0) <= room) pinned.push(...later);
  return { pinned, omitted: missing.length - pinned.length };
}

function middleTurnAt(messages: readonly ChatMessage[], i: number, summary: LocatedSummary | null): ChatMessage | null {
  const message = messages[i]!;
  if (summary && i === summary.index) {
    return summary.rest !== '' || (message.role === 'assistant' && message.tool_calls?.length) ? ({ ...message, content: summary.rest } as ChatMessage) : null;
  }
  return isSummaryAck(message) ? null : message;
}

function watermarkHolds(messages: readonly ChatMessage[], mined: CompactionState['mined']): boolean {
  if (!mined || mined.count > messages.length || mined.count === 0) return false;
  return hashMessage(messages[mined.count - 1]!) === mined.hash;
}

function hashMessage(message: ChatMessage): string {
  const calls = hasToolCalls(message) ? message.tool_calls.map((c) => `${c.id}\u0000${c.function.arguments}`).join('\u0001') : '';
  return hashText(`${message.role}\u0000${messageText(message)}\u0000${calls}`);
}
