/**
 * The web chat's live replies (streaming), in this process: the open draft of each conversation
 * (the reply being written: its stream id and text so far) and the listeners told of each delta
 * (SSE streams, waiting long polls). Every gateway receives the workers' partial replies and keeps
 * its own; a draft closes when its final reply is sent or read (from any gateway), or is dropped.
 */

/** One delta for SSE: seq 0 starts (or restarts) the live bubble with `text`; later seqs append it. */
export interface DraftDelta {
  liveReplyId: string;
  seq: number;
  text: string;
}

/** The open draft of a conversation, as the long poll shows it: the whole text so far. */
export interface OpenDraft {
  liveReplyId: string;
  text: string;
}

/** Bounds the drafts kept (one per conversation with a reply being written). */
const MAX_DRAFTS = 10_000;

/** See the module comment. */
export class DraftHub {
  private readonly drafts = new Map<string, OpenDraft & { seq: number }>();
  private readonly listeners = new Map<string, Set<(delta: DraftDelta) => void>>();

  /** Applies one update of the gateway's stream view: seq 0 replaces the text, later seqs append to it. */
  update(conversationId: string, delta: DraftDelta): void {
    const current = this.drafts.get(conversationId);
    const text = delta.seq === 0 || !current || current.liveReplyId !== delta.liveReplyId ? delta.text : current.text + delta.text;
    const seq = delta.seq === 0 || !current || current.liveReplyId !== delta.liveReplyId ? 0 : current.seq + 1;
    this.drafts.delete(conversationId);
    if (this.drafts.size >= MAX_DRAFTS) this.drafts.delete(this.drafts.keys().next().value as string);
    this.drafts.set(conversationId, { liveReplyId: delta.liveReplyId, text, seq });
    this.tell(conversationId, { liveReplyId: delta.liveReplyId, seq, text: seq === 0 ? text : delta.text });
  }

  /** Closes the draft of `liveReplyId` (its final reply is there, or it was no reply). With `tellCleared`, live bubbles are emptied (seq 0, no text). */
  close(conversationId: string, liveReplyId: string, tellCleared = false): void {
    if (this.drafts.get(conversationId)?.liveReplyId !== liveReplyId) return;
    this.drafts.delete(conversationId);
    if (tellCleared) this.tell(conversationId, { liveReplyId, seq: 0, text: '' });
  }

  /** The open draft of a conversation, if any. */
  open(conversationId: string): OpenDraft | undefined {
    const draft = this.drafts.get(conversationId);
    return draft ? { liveReplyId: draft.liveReplyId, text: draft.text } : undefined;
  }

  /**
   * Follows a conversation's live replies for one SSE stream: the open draft first, as seq 0 with
   * the text so far, then each delta numbered for this stream (the next seq appends, seq 0
   * restarts), so a page that joins mid-reply continues it. Returns the function that stops it.
   */
  follow(conversationId: string, listener: (delta: DraftDelta) => void): () => void {
    const open = this.drafts.get(conversationId);
    // Where this stream's numbering of the open draft starts: the hub's seq at the snapshot.
    let offset = open ? { liveReplyId: open.liveReplyId, seq: open.seq } : undefined;
    const unlisten = this.listen(conversationId, (delta) => {
      if (delta.seq === 0 || offset?.liveReplyId !== delta.liveReplyId) offset = undefined;
      listener(offset ? { ...delta, seq: delta.seq - offset.seq } : delta);
    });
    if (open) listener({ liveReplyId: open.liveReplyId, seq: 0, text: open.text });
    return unlisten;
  }

  /** Registers a delta listener; returns the function that removes it. */
  listen(conversationId: string, listener: (delta: DraftDelta) => void): () => void {
    let set = this.listeners.get(conversationId);
    if (!set) this.listeners.set(conversationId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(conversationId) === set) this.listeners.delete(conversationId);
    };
  }

  private tell(conversationId: string, delta: DraftDelta): void {
    for (const listener of [...(this.listeners.get(conversationId) ?? [])]) listener(delta);
  }
}
