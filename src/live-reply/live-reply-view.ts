/**
 * How one stream of partial replies is shown in its chat: as a draft where the channel has drafts
 * (Telegram private chats, the web chat), else as one message the bot sends and then edits in
 * place (Telegram groups, Discord). One platform call at a time per stream, at most one per
 * `intervalMs` per chat, always with the latest text (never a backlog); a rate limit pushes the
 * chat's next call past its retry-after and doubles the chat's interval (up to `maxIntervalMs`).
 * Failures are logged and never reach the turn.
 */
import type { Channel, LiveReplyChat } from '../../channels/channel.js';
import { CHANNEL_ERROR_CODES } from '../../channels/channel.js';
import { ChannelError } from '../errors.js';
import type { Logger } from '../log.js';
import type { LiveReplyCallEnd, LiveReplyTarget, LiveReplyRecords } from './record.js';
import { previewText } from './preview-text.js';

/** A call that left the stream's message as it was. */
const KEEP: LiveReplyCallEnd = { message: 'keep' };

/** The pace of one chat's partial updates, shared by its streams. */
export interface ChatPace {
  intervalMs: number;
  nextAtMs: number;
}

/** What a {@link LiveReplyView} needs. */
export interface StreamViewDeps {
  channel: Channel;
  views: LiveReplyRecords;
  /** This gateway's id in the streams' view records (one gateway shows a stream at a time). */
  owner: string;
  log: Logger;
  pace: ChatPace;
  /** The pace a chat returns to after it was slowed down, ms. */
  baseIntervalMs: number;
  maxIntervalMs: number;
}

/** One stream's presence in its chat. */
export class LiveReplyView {
  /** `draft`/`edit` once chosen; `off` when the channel cannot show partials here (or gave up). */
  mode: 'unknown' | 'draft' | 'edit' | 'off' = 'unknown';
  messageId: string | undefined;
  /** The worker's latest text; '' after a drop. */
  private wanted = '';
  /** The inbound messages the turn answers, from its latest update (a draft names them). */
  private answers: readonly string[] = [];
  private cleared = true;
  private shown = '';
  private draftSeq = 0;
  private final = false;
  private timer: NodeJS.Timeout | undefined;
  private busy: Promise<void> | undefined;
  private readonly target: LiveReplyChat;

  constructor(private readonly deps: StreamViewDeps, readonly partial: LiveReplyTarget) {
    this.target = { chatId: partial.chatId, ...(partial.threadId ? { threadId: partial.threadId } : {}), ...(partial.chatType ? { chatType: partial.chatType } : {}) };
  }

  /** The text so far changed (a new run starts over: `restart`); `answers`: the messages its turn answers. */
  show(text: string, restart: boolean, answers: readonly string[]): void {
    if (this.final) return;
    if (restart) this.draftSeq = 0;
    this.wanted = text;
    this.answers = answers;
    this.cleared = false;
    this.schedule();
  }

  /** The text shown so far was no reply: take it away. */
  drop(): void {
    if (this.final) return;
    this.wanted = '';
    this.schedule();
  }

  /** The final reply takes over: no more updates; waits for the call in flight. @returns the message the partial is in, if any. */
  async takeOver(): Promise<string | undefined> {
    this.final = true;
    clearTimeout(this.timer);
    await this.busy;
    return this.mode === 'edit' ? this.messageId : undefined;
  }

  /** True when no platform call is in flight or waiting: the view may be forgotten. */
  get idle(): boolean {
    return this.busy === undefined && this.timer === undefined;
  }

  private schedule(): void {
    if (this.timer || this.busy || this.final) return;
    this.timer = setTimeout(() => this.flush(), Math.max(0, this.deps.pace.nextAtMs - Date.now()));
  }

  private flush(): void {
    this.timer = undefined;
    if (this.final || this.busy) return;
    const work = this.wanted === '' ? this.clear() : this.render(this.wanted);
    if (!work) return;
    this.busy = work.finally(() => {
      this.busy = undefined;
      if (!this.final && (this.wanted !== this.shown || (this.wanted === '' && !this.cleared))) this.schedule();
    });
  }

  private render(text: string): Promise<void> | undefined {
    if (text === this.shown || this.mode === 'off' || text.trim() === '') return undefined;
    return this.call(() => this.fenced(async () => {
      if (this.mode === 'unknown' || this.mode === 'draft') await this.renderDraft(text);
      const change = this.mode === 'edit' ? await this.renderEdit(text) : KEEP;
      this.shown = text;
      return change;
    }));
  }

  private async renderDraft(text: string): Promise<void> {
    const { channel } = this.deps;
    if (!channel.sendDraft) {
      this.mode = channel.editMessage ? 'edit' : 'off';
      return;
    }
    const continues = this.draftSeq > 0 && text.startsWith(this.shown);
    const draft = { liveReplyId: this.partial.liveReplyId, seq: continues ? this.draftSeq : 0, text, appended: continues ? text.slice(this.shown.length) : text, answers: this.answers };
    try {
      const shown = await channel.sendDraft(this.target, draft);
      if (!shown) this.mode = channel.editMessage ? 'edit' : 'off';
      else {
        this.mode = 'draft';
        this.draftSeq = draft.seq + 1;
      }
    } catch (err) {
      if (err instanceof ChannelError && err.retryable) throw err;
      // A chat (or bot) without drafts: show the stream by editing a message instead.
      this.deps.log.info({ err, liveReplyId: this.partial.liveReplyId }, 'drafts refused here; editing a message in place instead');
      this.mode = channel.editMessage ? 'edit' : 'off';
    }
  }

  private async renderEdit(text: string): Promise<LiveReplyCallEnd> {
    const { channel } = this.deps;
    const preview = { text: previewText(text, channel), mode: 'plain' as const };
    if (this.messageId !== undefined) {
      await channel.editMessage!(this.target, this.messageId, preview);
      return KEEP;
    }
    const sent = await channel.send({ ...this.target, ...(this.partial.replyTo ? { replyTo: this.partial.replyTo } : {}) }, preview);
    this.messageId = sent.messageId;
    return { message: 'set', messageId: sent.messageId };
  }

  private clear(): Promise<void> | undefined {
    if (this.cleared) return undefined;
    return this.call(() => this.fenced(async () => {
      const { channel } = this.deps;
      let change: LiveReplyCallEnd = KEEP;
      if (this.mode === 'draft') await channel.clearDraft?.(this.target, this.partial.liveReplyId);
      if (this.mode === 'edit' && this.messageId !== undefined) {
        await channel.deleteMessage?.(this.target, this.messageId);
        this.messageId = undefined;
        change = { message: 'clear' };
      }
      this.cleared = true;
      this.shown = '';
      this.draftSeq = 0;
      return change;
    }));
  }

  /**
   * Runs one platform call of a chat every gateway can reach between `begin` and `end` on the
   * stream's view record (src/live-reply/record.ts): skipped once the final reply took the stream over
   * (this view stops) or while another gateway shows it (this view starts over if it gets the
   * stream later). A channel whose partials live in this process (the web chat) needs no fence.
   */
  private async fenced(work: () => Promise<LiveReplyCallEnd>): Promise<void> {
    const { channel, views, owner } = this.deps;
    if (channel.localDrafts) {
      await work();
      return;
    }
    const { sessionId, liveReplyId } = this.partial;
    const call = await views.begin(sessionId, liveReplyId, owner);
    if (!call.go) {
      this.deps.log.debug({ liveReplyId, reason: call.reason }, call.reason === 'final' ? 'partial not shown: the final reply has taken the stream over' : 'partial not shown: another gateway shows this stream');
      if (call.reason === 'final') this.final = true;
      else this.yieldToOther();
      return;
    }
    // The record knows the message another gateway (or an earlier process) showed the stream in.
    if (call.messageId !== undefined) this.messageId = call.messageId;
    let change: LiveReplyCallEnd = KEEP;
    try {
      change = await work();
    } finally {
      await views.end(sessionId, liveReplyId, owner, change);
    }
  }

  /** Another gateway shows this stream: whatever this view showed is its now; start over if it comes back here. */
  private yieldToOther(): void {
    this.shown = '';
    this.draftSeq = 0;
    this.messageId = undefined;
  }

  /** One platform call, paced for the chat; a failure slows the chat down and is logged, never thrown. */
  private async call(work: () => Promise<void>): Promise<void> {
    const { pace } = this.deps;
    try {
      await work();
      pace.intervalMs = Math.max(this.deps.baseIntervalMs, Math.floor(pace.intervalMs * 0.9));
      pace.nextAtMs = Date.now() + pace.intervalMs;
    } catch (err) {
      const error = err instanceof ChannelError ? err : new ChannelError(`partial reply failed on ${this.deps.channel.name} (unexpected error)`, { retryable: true, code: CHANNEL_ERROR_CODES.transient, cause: err });
      if (error.code === CHANNEL_ERROR_CODES.rateLimited) pace.intervalMs = Math.min(this.deps.maxIntervalMs, pace.intervalMs * 2);
      pace.nextAtMs = Date.now() + Math.max(pace.intervalMs, error.retryAfterMs ?? 0);
      if (!error.retryable) this.giveUp(error);
      else this.deps.log.debug({ err: error, liveReplyId: this.partial.liveReplyId, intervalMs: pace.intervalMs }, 'partial reply not shown; trying again with the latest text');
    }
  }

  private giveUp(error: ChannelError): void {
    this.deps.log.warn({ err: error, liveReplyId: this.partial.liveReplyId }, 'partial replies stopped for this reply (the final reply is delivered as usual)');
    this.mode = 'off';
  }
}
