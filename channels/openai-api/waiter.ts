/**
 * The HTTP requests waiting for their answers, by chat, in arrival order. The channel's `send` and
 * `sendDraft` feed them; a request reads {@link Waiter.answer} (and, streaming, the text as it is
 * written). A request that went away stays in line, orphaned, until its answer comes: the answer is
 * then dropped, so it never answers the next request. A turn's answer says which messages it
 * followed, from the session's transcript and its own `answers` (`covered`): it answers the requests
 * among them only; so does an approval question, a notice (one in place of the reply, a command's
 * answer: OutgoingText.answers). A live reply names the messages its turn answers:
 * its text is streamed to those requests only. A turn resumed by an approval names the `/approve`
 * message among them. A tool round that asks several questions answers with all of them, or, when
 * one of them does not come (its delivery failed for good, a relayed one was lost), with those that
 * came once {@link ROUND_WAIT_MS} has passed since the first.
 */
import type { DraftUpdate } from '../channel.js';

/** How many delivered messages a chat keeps for requests whose verdict is not known yet. */
const MAX_UNCLAIMED = 16;

/**
 * How long a request that holds some of its round's questions waits for the others, ms. A round's
 * questions are delivered one after the other, in order, within moments; one that has not come by
 * then may never come (failed for good: src/outbound/handle-entry.ts; a relayed one lost on pub/sub).
 */
export const ROUND_WAIT_MS = 10_000;

/** One message the gateway delivered to an API chat (one chunk: the channel's limit is far above any answer). */
export interface Delivered {
  text: string;
  /** The turn's reply, or the notice standing in for it (OutgoingText.answersTurn). */
  answersTurn: boolean;
  /** It carries buttons: a question the turn waits on (an approval), which ends the request too. */
  asks: boolean;
  /** For a question: how many its tool round asks (OutgoingText.questions): the request ends once it holds them all. Absent: one. */
  questions?: number;
  /** The reply's id (its delivery id without the chunk index), for a message that answers a turn. */
  replyId?: string;
  /** The messages it answers, as it names them (a turn's reply and notices, an approval question, the gateway's own answers; OutgoingText.answers). */
  answers?: readonly string[];
  /** It answers the turn because a spend limit holds (OutgoingText.refusal): the request is answered 429. */
  refusal?: 'over_budget';
}

/**
 * What a request waits for: its turn's answer, the answer of a turn its approval resumed (which
 * names the approval's message as one it answers), or a chat command's answer.
 */
export type WaitMode = 'pending' | 'turn' | 'resumed' | 'command';

/** What became of a delivered message. */
export type Handed = 'answered' | 'orphaned' | 'kept' | 'unwanted';

/** A request waiting for its answer; see the module comment. */
export class Waiter {
  /** Resolves with the answer's text; rejects when the wait is cancelled. */
  readonly answer: Promise<string>;
  mode: WaitMode = 'pending';
  /** The client went away: the answer is taken from the line and dropped. */
  orphaned = false;
  /** Set with the answer when it is a refusal (a spend limit holds), before {@link answer} resolves. */
  refusal: Delivered['refusal'];
  private settle!: { resolve: (text: string) => void; reject: (err: Error) => void };
  private done = false;
  /** The live reply streamed (its id), its text so far, and whether the next text starts a new paragraph. */
  private showing: string | undefined;
  private shown = '';
  private breakNext = false;
  /** The texts of the questions of a round taken so far, while more are to come. */
  private asked: string[] = [];
  /** Ends the wait for the rest of the round ({@link ROUND_WAIT_MS}). */
  private roundTimer: NodeJS.Timeout | undefined;

  /**
   * `messageId`: the id of the message the request sent; `onText`: called with each piece of text to
   * stream (streaming requests only); `roundWaitMs`: how long a round's first question waits for the
   * others, default {@link ROUND_WAIT_MS}.
   */
  constructor(readonly messageId: string, private readonly onText?: (delta: string) => void, private readonly roundWaitMs = ROUND_WAIT_MS) {
    this.answer = new Promise<string>((resolve, reject) => (this.settle = { resolve, reject }));
    // An orphan's promise is never read.
    this.answer.catch(() => undefined);
  }

  /** Whether the answer came (or the wait was cancelled). */
  get finished(): boolean {
    return this.done;
  }

  /** Whether `item` ends this wait: a command's answer is a notice; a turn's is its reply (or the notice in its place), or a question. */
  wants(item: Delivered): boolean {
    if (this.mode === 'pending') return false;
    return this.mode === 'command' ? !item.answersTurn && !item.asks : item.answersTurn || item.asks;
  }

  /**
   * Ends the wait with `item`'s text (streaming: what the live reply did not show yet is written
   * first). A question of a round that asks several is kept until the round's last one: the answer
   * is all of them, a blank line apart (each once: one delivered twice counts once). When the others
   * have not all come `roundWaitMs` after the first, the answer is those that came, and a line
   * saying how many did not.
   */
  take(item: Delivered): void {
    if (this.done) return;
    let text = item.text;
    if (item.asks && (item.questions ?? 1) > 1) {
      if (!this.asked.includes(item.text)) this.asked.push(item.text);
      const missing = item.questions! - this.asked.length;
      if (missing > 0) {
        this.roundTimer ??= setTimeout(() => this.finish(`${this.asked.join('\n\n')}\n\n${missingLine(item.questions! - this.asked.length)}`), this.roundWaitMs);
        return;
      }
      text = this.asked.join('\n\n');
    }
    this.refusal = item.refusal;
    this.finish(text, item.refusal);
  }

  /** The whole text so far of the live reply `liveReplyId`. */
  draft(liveReplyId: string, text: string): void {
    this.showing = liveReplyId;
    this.stream(text);
  }

  /** The live reply `liveReplyId` so far was no answer (tool calls follow): what comes next starts a new paragraph. */
  clearDraft(liveReplyId: string): void {
    if (liveReplyId !== this.showing) return;
    if (this.shown !== '') this.breakNext = true;
    this.shown = '';
  }

  /** The client went away: the request keeps its place in line, and its answer is dropped when it comes. */
  orphan(): void {
    this.orphaned = true;
  }

  /** Ends the wait with `err` (the channel stopped, the wait timed out). */
  cancel(err: Error): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.roundTimer);
    this.settle.reject(err);
  }

  /** Ends the wait with `text`. */
  private finish(text: string, refusal?: Delivered['refusal']): void {
    if (this.done) return;
    // A refusal is answered as an error, never streamed as text.
    if (!refusal) this.stream(text);
    this.done = true;
    clearTimeout(this.roundTimer);
    this.settle.resolve(text);
  }

  /** Streams `text`, the whole text so far. Text that does not continue what was streamed starts a new paragraph. */
  private stream(text: string): void {
    if (this.done || !this.onText || this.orphaned) return;
    if (text.startsWith(this.shown)) this.write(text.slice(this.shown.length));
    else {
      if (this.shown !== '') this.breakNext = true;
      this.write(text);
    }
    this.shown = text;
  }

  private write(delta: string): void {
    if (delta === '') return;
    this.onText!(this.breakNext ? `\n\n${delta}` : delta);
    this.breakNext = false;
  }
}

/** The waiting requests of every chat; see the module comment. */
export class Waiters {
  private readonly chats = new Map<string, { line: Waiter[]; unclaimed: Array<{ item: Delivered; covered?: ReadonlySet<string> }> }>();

  /** Requests waiting (orphans included). */
  get size(): number {
    let count = 0;
    for (const chat of this.chats.values()) count += chat.line.length;
    return count;
  }

  /** Whether any request of `chatId` waits here. */
  has(chatId: string): boolean {
    return this.chats.has(chatId);
  }

  /** Whether a request of `chatId` that is no command still waits for its answer, its client still there. */
  busy(chatId: string): boolean {
    return this.chats.get(chatId)?.line.some((waiter) => !waiter.orphaned && waiter.mode !== 'command') ?? false;
  }

  /** Puts `waiter` in line (before its message goes in: the answer may come before the verdict). */
  add(chatId: string, waiter: Waiter): void {
    const chat = this.chats.get(chatId) ?? { line: [], unclaimed: [] };
    chat.line.push(waiter);
    this.chats.set(chatId, chat);
  }

  /** The verdict is known: the waiter takes a message that came before it, if one answers it. */
  decide(chatId: string, waiter: Waiter, mode: Exclude<WaitMode, 'pending'>): void {
    waiter.mode = mode;
    const chat = this.chats.get(chatId);
    if (!chat) return;
    // In order, until it is answered: a round's questions are several messages.
    for (const kept of [...chat.unclaimed]) {
      if (waiter.finished) break;
      if (!waiter.wants(kept.item) || takers([waiter], kept.covered).length === 0) continue;
      waiter.take(kept.item);
      // An answer of several requests (a resumed turn's, for each `/approve` that decided it) stays for the others still without a verdict.
      if (!chat.line.some((other) => other.mode === 'pending' && kept.covered?.has(other.messageId) === true)) chat.unclaimed.splice(chat.unclaimed.indexOf(kept), 1);
    }
    // Kept only for requests still without a verdict: none left, nothing is kept.
    if (!chat.line.some((other) => other.mode === 'pending')) chat.unclaimed = [];
  }

  /** Takes `waiter` out of line. */
  remove(chatId: string, waiter: Waiter): void {
    const chat = this.chats.get(chatId);
    if (!chat) return;
    chat.line = chat.line.filter((other) => other !== waiter);
    if (chat.line.length === 0) this.chats.delete(chatId);
  }

  /** Whether a request of `chatId` here waits (or may wait) for a turn's answer: then {@link deliver} wants to know which messages an answer followed. */
  awaitsTurn(chatId: string): boolean {
    return this.chats.get(chatId)?.line.some((waiter) => !waiter.finished && waiter.mode !== 'command') ?? false;
  }

  /**
   * Hands a delivered message to the requests it answers. `covered`, known for a turn's answer:
   * the messages it followed in the transcript; the requests among them take it, never another
   * (an abandoned request's answer is not the next request's). Otherwise the first request in
   * line that wants it takes it.
   */
  deliver(chatId: string, item: Delivered, covered?: ReadonlySet<string>): Handed {
    const chat = this.chats.get(chatId);
    if (!chat) return 'unwanted';
    const taking = takers(chat.line.filter((candidate) => !candidate.finished && candidate.wants(item)), covered);
    for (const waiter of taking) waiter.take(item);
    // A request whose verdict is not known yet may be one it answers (as well: an `/approve` whose decision resumed the turn).
    const awaited = chat.line.some((candidate) => candidate.mode === 'pending' && (taking.length === 0 || covered?.has(candidate.messageId) === true));
    if (awaited) {
      chat.unclaimed.push({ item, ...(covered ? { covered } : {}) });
      if (chat.unclaimed.length > MAX_UNCLAIMED) chat.unclaimed.shift();
    }
    if (taking.some((waiter) => !waiter.orphaned)) return 'answered';
    if (awaited) return 'kept';
    return taking.length > 0 ? 'orphaned' : 'unwanted';
  }

  /**
   * A live reply's text so far: shown to the requests waiting for a turn whose messages its turn
   * answers (`answers`; not known: the first in line), never to another's.
   * @returns whether a request here takes it.
   */
  draft(chatId: string, draft: Pick<DraftUpdate, 'liveReplyId' | 'text' | 'answers'>): boolean {
    const waiting = this.chats.get(chatId)?.line.filter((candidate) => !candidate.finished && candidate.mode !== 'command') ?? [];
    const showing = takers(waiting, draft.answers ? new Set(draft.answers) : undefined);
    for (const waiter of showing) waiter.draft(draft.liveReplyId, draft.text);
    return showing.length > 0;
  }

  /** The live reply `liveReplyId` was no answer (tool calls follow): the request showing it starts a new paragraph next. */
  clearDraft(chatId: string, liveReplyId: string): void {
    for (const waiter of this.chats.get(chatId)?.line ?? []) waiter.clearDraft(liveReplyId);
  }

  /** Cancels every wait (the channel stops). */
  cancelAll(err: Error): void {
    for (const chat of this.chats.values()) for (const waiter of chat.line) waiter.cancel(err);
    this.chats.clear();
  }
}

/** What a round's answer says of the questions that did not come: the `/approve` answer lists what still waits (src/gateway/approval-commands.ts). */
function missingLine(count: number): string {
  return `(${count === 1 ? 'One more question' : `${count} more questions`} of this round did not arrive. The answer to an /approve or /deny lists the tool calls still waiting.)`;
}

/**
 * Which of `wanting` (in line order) take an answer (or a live reply) that answers the messages
 * `covered` (an `/approve`'s request among them when its decision resumed the turn): theirs only;
 * not known: the first in line.
 */
function takers(wanting: readonly Waiter[], covered: ReadonlySet<string> | undefined): Waiter[] {
  if (!covered) return wanting.slice(0, 1);
  return wanting.filter((waiter) => covered.has(waiter.messageId));
}
