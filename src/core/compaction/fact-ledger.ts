import { scanFacts, scanMessage } from './facts.js';
import type { MessageMemos } from './message-memo.js';
import { hasToolCalls, isChatgateText, isToolImagesMessage, messageText, type ChatMessage } from '../messages.js';
import { FactOrigin, type FactLedger, type FactRecord, type FoundFact, type LedgerClock, type MinedFacts, type NoteTools, type ShapeStrength } from './compaction-types.js';

/** Most facts a ledger keeps; beyond this the least salient (then least recently seen) are forgotten. */
export const MAX_LEDGER_FACTS = 2000;


const ORIGIN_SCORE: Record<FactOrigin, number> = { 0: 0, 1: 12, 2: 20, 3: 30, 4: 40, 5: 1000 };
const SHAPE_SCORE: Record<ShapeStrength, number> = { 0: 0, 1: 15, 2: 25 };
const USE_SCORE = 15;
/** A weak shape (a code name, a timestamp) reused counts for less: sku_12 fetched twice is still a code name. */
const WEAK_USE_SCORE = 5;
const MAX_COUNTED_USES = 3;
/**
 * Salience below which a fact is noise-like: a bare token of tool output, code or logs, a labelled
 * number, a code name in a call, each seen once. Such facts stay in the ledger (search_history finds
 * them) and get a pinned line only from a small allowance, once every stronger fact has one.
 */
export const LOW_SALIENCE = 36;

const NO_MINED: MinedFacts = Object.freeze([]);

/**
 * How much a fact matters: its origin, the strength of its shape and how often later turns used it
 * again. `remember` notes outrank everything. Recency breaks ties (see {@link bySalience}).
 */
export function salienceOf(record: FactRecord): number {
  const perUse = record[4] === 0 ? WEAK_USE_SCORE : USE_SCORE;
  return ORIGIN_SCORE[record[2]] + SHAPE_SCORE[record[4]] + perUse * Math.min(record[3], MAX_COUNTED_USES);
}

/** Orders facts by salience, then recency, then the fact itself (deterministic). */
export function bySalience(ledger: Readonly<FactLedger>): (a: string, b: string) => number {
  return (a, b) => {
    const ra = ledger[a]!;
    const rb = ledger[b]!;
    return salienceOf(rb) - salienceOf(ra) || rb[0] - ra[0] || compareText(a, b);
  };
}

/**
 * `facts` sorted as {@link bySalience} sorts them, each record read once (`recordOf`) rather than twice
 * per comparison: the ledger and the pinned section sort thousands of facts.
 */
export function orderBySalience(facts: readonly string[], recordOf: (fact: string) => FactRecord): string[] {
  const salience = new Float64Array(facts.length);
  const seen = new Float64Array(facts.length);
  const order = facts.map((fact, i) => {
    const record = recordOf(fact);
    salience[i] = salienceOf(record);
    seen[i] = record[0];
    return i;
  });
  order.sort((i, j) => salience[j]! - salience[i]! || seen[j]! - seen[i]! || compareText(facts[i]!, facts[j]!));
  return order.map((i) => facts[i]!);
}

/**
 * Adds the facts of `messages` to the ledger. `fresh` says whether these messages are new since the
 * last mining (their sightings count as uses); re-mined messages only refresh what is known.
 * chatgate's own notes are skipped; `summaryIndex` names the message carrying the summary block,
 * whose `rest` (what the user or model wrote around it) is mined instead. Inputs are not mutated.
 */
export function mineMessages(
  messages: readonly ChatMessage[],
  ledger: Readonly<FactLedger>,
  clock: LedgerClock,
  options: { fresh: boolean; noteTools: NoteTools; memos: MessageMemos; summaryIndex?: number; summaryRest?: string },
): { facts: FactLedger; clock: LedgerClock } {
  // A Map while mining: a fact is a slice of a message, and an object keyed by such strings costs a
  // string-table lookup per access. Records are copied, so the input ledger is never changed.
  const facts = new Map<string, FactRecord>();
  for (const fact in ledger) facts.set(fact, [...ledger[fact]!]);
  const noteFacts = { ...clock.noteFacts };
  let { factClock, turnClock } = clock;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === 'system') continue;
    if (message.role === 'user' && options.fresh && !isToolImagesMessage(message, messages[i - 1]?.role)) turnClock++;
    const mined = i === options.summaryIndex ? mineText(options.summaryRest ?? '', message.role) : minedFactsOf(message, options.memos);
    if (mined.length > 0) {
      factClock++;
      for (const [fact, found, shape, tool] of mined) {
        const origin = tool !== undefined && tool === options.noteTools.remember ? FactOrigin.note : found;
        note(facts, fact, factClock, turnClock, origin, shape, options.fresh);
      }
    }
    applyNoteCalls(message, options.noteTools, facts, noteFacts);
  }
  return { facts: boundLedger(facts), clock: { factClock, turnClock, noteFacts } };
}

/**
 * The facts of one message with their origin and shape (chatgate's own notes have none), read from
 * the message's scan and remembered per message object in `memos`.
 */
export function minedFactsOf(message: ChatMessage, memos: MessageMemos): MinedFacts {
  const memo = memos.of(message);
  if (memo.mined) return memo.mined;
  const scan = scanMessage(message, memos);
  let mined: MinedFacts = scan.text.length === 0 || isChatgateText(messageText(message)) ? NO_MINED : withOrigins(scan.text, message.role);
  if (scan.calls.length > 0) {
    const all = [...mined];
    for (const [tool, facts] of scan.calls) for (const found of facts) all.push([found.fact, FactOrigin.call, found.shape, tool]);
    mined = all;
  }
  memo.mined = mined;
  return mined;
}

function mineText(text: string, role: ChatMessage['role']): MinedFacts {
  if (!text || isChatgateText(text)) return NO_MINED;
  return withOrigins(scanFacts(text, role === 'tool' ? 'tool' : 'words'), role);
}

function withOrigins(found: readonly FoundFact[], role: ChatMessage['role']): Array<MinedFacts[number]> {
  if (role === 'tool') return found.map((f) => [f.fact, f.context === 'labelled' ? FactOrigin.labelled : FactOrigin.bare, f.shape] as const);
  const words = role === 'user' ? FactOrigin.user : FactOrigin.assistant;
  return found.map((f) => [f.fact, f.context === 'prose' ? words : FactOrigin.bare, f.shape] as const);
}

function note(facts: Map<string, FactRecord>, fact: string, seen: number, turn: number, origin: FactOrigin, shape: ShapeStrength, fresh: boolean): void {
  const record = facts.get(fact);
  if (!record) {
    facts.set(fact, [seen, turn, origin, 0, shape]);
    return;
  }
  // A later turn's user, model or tool call using the fact again raises it; tool output does not.
  const reused = fresh && origin >= FactOrigin.assistant && turn > record[1];
  record[0] = Math.max(record[0], seen);
  if (reused) {
    record[1] = turn;
    record[3] += 1;
  }
  record[2] = Math.max(record[2], origin) as FactOrigin;
  record[4] = Math.max(record[4], shape) as ShapeStrength;
}

/** Records which facts a `remember` key holds, and releases a key's facts on `forget`. */
function applyNoteCalls(message: ChatMessage, tools: NoteTools, facts: Map<string, FactRecord>, noteFacts: Record<string, string[]>): void {
  if (!hasToolCalls(message)) return;
  for (const call of message.tool_calls) {
    if (call.function.name !== tools.remember && call.function.name !== tools.forget) continue;
    const key = noteKey(call.function.arguments);
    if (key === null) continue;
    const previous = noteFacts[key] ?? [];
    for (const fact of previous) {
      const record = facts.get(fact);
      if (record && record[2] === FactOrigin.note) record[2] = FactOrigin.call;
    }
    if (call.function.name === tools.forget) {
      delete noteFacts[key];
      continue;
    }
    const held = scanFacts(call.function.arguments, 'words').map((f) => f.fact);
    for (const fact of held) {
      const record = facts.get(fact);
      if (record) record[2] = FactOrigin.note;
    }
    noteFacts[key] = held;
  }
}

function noteKey(args: string): string | null {
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed && typeof parsed === 'object' && typeof (parsed as { key?: unknown }).key === 'string') return (parsed as { key: string }).key;
  } catch {
    // arguments the model garbled: no key to track
  }
  return null;
}

/** The ledger of the MAX_LEDGER_FACTS most salient facts (notes always), recency breaking ties. */
function boundLedger(facts: Map<string, FactRecord>): FactLedger {
  const kept: FactLedger = {};
  if (facts.size <= MAX_LEDGER_FACTS) {
    for (const [fact, record] of facts) kept[fact] = record;
    return kept;
  }
  const entries = [...facts.keys()];
  for (const fact of orderBySalience(entries, (f) => facts.get(f)!).slice(0, MAX_LEDGER_FACTS)) kept[fact] = facts.get(fact)!;
  for (const fact of entries) if (facts.get(fact)![2] === FactOrigin.note) kept[fact] = facts.get(fact)!;
  return kept;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
