/**
 * One HTTP request waiting for its answer, and the registry of them by chat. The channel's `send`
 * and `sendDraft` feed them; the request reads {@link Waiter.answer} (and, streaming, the text as
 * it is written).
 */

/** One message the gateway delivered to an API chat (one chunk: the channel's limit is far above any answer). */
export interface Delivered {
  text: string;
  /** The turn's reply, or the notice standing in for it (OutgoingText.answersTurn). */
  answersTurn: boolean;
  /** It carries buttons: a question the turn waits on (an approval), which ends the request too. */
  asks: boolean;
}

/** What a request waits for: its turn's answer, or (a chat command) the command's answer. */
export type WaitMode = 'pending' | 'turn' | 'command';

/** A request waiting for its answer; see the module comment. */
export class Waiter {
  /** Resolves with the answer's text; rejects when the wait is cancelled. */
  readonly answer: Promise<string>;
  private mode: WaitMode = 'pending';
  private readonly received: Delivered[] = [];
  private settle!: { resolve: (text: string) => void; reject: (err: Error) => void };
  private done = false;
  /** The text of the live reply shown so far (streamed to the client), and whether the next text starts a new paragraph. */
  private shown = '';
  private breakNext = false;

  /** `onText`: called with each piece of text to stream (streaming requests only). */
  constructor(readonly chatId: string, private readonly onText?: (delta: string) => void) {
    this.answer = new Promise<string>((resolve, reject) => (this.settle = { resolve, reject }));
    // A request that went away leaves its promise unread.
    this.answer.catch(() => undefined);
  }

  /** Whether the answer came (or the wait was cancelled). */
  get finished(): boolean {
    return this.done;
  }

  /** The gateway's verdict is known: what ends the wait. Messages delivered before it are looked at now. */
  decide(mode: Exclude<WaitMode, 'pending'>): void {
    this.mode = mode;
    this.check();
  }

  /** A message for this chat. */
  deliver(item: Delivered): void {
    if (this.done) return;
    this.received.push(item);
    this.check();
  }

  /** The live reply's whole text so far. Text that does not continue what was streamed starts a new paragraph. */
  draft(text: string): void {
    if (this.done || !this.onText) return;
    if (text.startsWith(this.shown)) this.write(text.slice(this.shown.length));
    else {
      if (this.shown !== '') this.breakNext = true;
      this.write(text);
    }
    this.shown = text;
  }

  /** The live reply so far was no answer (tool calls follow): what comes next starts a new paragraph. */
  clearDraft(): void {
    if (this.shown !== '') this.breakNext = true;
    this.shown = '';
  }

  /** Ends the wait with `err` (the request went away, the channel stopped, the wait timed out). */
  cancel(err: Error): void {
    if (this.done) return;
    this.done = true;
    this.settle.reject(err);
  }

  private check(): void {
    if (this.done || this.mode === 'pending') return;
    // A command's answer is a notice; a turn's answer is its reply (or the notice in its place), or a question it waits on.
    const found = this.received.find((item) => (this.mode === 'command' ? !item.answersTurn : item.answersTurn || item.asks));
    if (!found) return;
    this.draft(found.text);
    this.done = true;
    this.settle.resolve(found.text);
  }

  private write(delta: string): void {
    if (delta === '') return;
    this.onText!(this.breakNext ? `\n\n${delta}` : delta);
    this.breakNext = false;
  }
}
