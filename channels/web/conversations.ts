/**
 * In-memory conversations of the web chat: a bounded buffer of outgoing messages per
 * conversation, numbered by `seq`, and listeners (SSE streams, long polls) woken on each event.
 * `seq` increases across the whole store (a conversation's numbers have gaps), so a conversation
 * evicted from memory and started again never reuses a number an open page has already seen.
 * Numbers restart at 1 when the process restarts, so every store has a random `epoch` and
 * clients resume from a cursor `<epoch>:<seq>`: a cursor of another epoch replays the whole buffer.
 * This is the default store of the web chat; `redis-replies.ts` is the shared, durable one.
 */
import { randomBytes } from 'node:crypto';
import type { MessageChoice } from '../../src/core/inbound.js';

/** One message from the bot to a web conversation, as clients receive it. */
export interface WebReply {
  /** Platform message id, unique across restarts: `web:<conversationId>:<epoch>:<seq>` in memory, `web:<conversationId>:<stream id>` in Redis. */
  id: string;
  /** Where a client that saw this reply resumes (`after=`, SSE `id:`): `<epoch>:<seq>` in memory, the stream id in Redis. */
  cursor: string;
  text: string;
  /** `markdown` for formatted replies, `text` for plain ones. */
  format: 'markdown' | 'text';
  /** ms since epoch. */
  at: number;
  /**
   * The outbound reply this chunk belongs to (its delivery id up to `#`), when it came through the
   * gateway's delivery: every chunk of one reply shares it, and the history names the answer by it.
   */
  replyId?: string;
  /** The stream this reply ends (its first chunk): the page replaces that stream's live bubble with it. */
  liveReplyId?: string;
  /** Buttons under the reply (an approval question's), each posting its command (`POST …/presses`). */
  choices?: MessageChoice[];
  /**
   * Not a message of its own: the new text of the reply with this id (a question once decided), shown
   * in its place without its buttons. At most one per reply.
   */
  edits?: string;
  /** In-memory store only: its boot id. */
  epoch?: string;
  /** In-memory store only: the reply's number within {@link WebReply.epoch}. */
  seq?: number;
}

/** What a reply may carry besides its text (see {@link WebReply}). */
export interface ReplyExtras {
  replyId?: string;
  liveReplyId?: string;
  choices?: readonly MessageChoice[];
  edits?: string;
}

/** A reply of the in-memory store. */
export interface MemoryReply extends WebReply {
  /** The store's boot id: `seq` restarts at 1 under a new epoch. */
  epoch: string;
  /**
   * Increasing within its epoch across all conversations, from 1 (so a conversation's numbers have
   * gaps, and an evicted conversation that comes back continues above them); clients resume with
   * `after=<epoch>:<seq>`.
   */
  seq: number;
}

/** What a listener is told: a new reply, a typing hint, or that the channel stopped. */
export type WebEvent = { type: 'message'; reply: MemoryReply } | { type: 'typing' } | { type: 'closed' };

/** Options of {@link createConversationStore}. */
export interface ConversationStoreOptions {
  /** Replies kept per conversation for replay. Default 200. */
  maxRepliesPerConversation?: number;
  /** Conversations kept; the least recently used is dropped beyond. Default 10 000. */
  maxConversations?: number;
}

/** Where a client is in a conversation: `<epoch>:<seq>`, or a bare `<seq>` (taken as the current epoch). */
export interface ReplyCursor {
  epoch?: string;
  seq: number;
}

/** The store; see the module comment. */
export interface ConversationStore {
  /** This store's boot id (random, `[0-9a-f]{12}`). */
  readonly epoch: string;
  /** Appends a reply and wakes the conversation's listeners; an `edits` of a reply edited before appends nothing and answers that edit. */
  append(conversationId: string, text: string, format: WebReply['format'], extras?: ReplyExtras): MemoryReply;
  /** Wakes the listeners with a typing hint (not stored). */
  typing(conversationId: string): void;
  /** The buffered reply with id `replyId`, if the buffer still holds it. */
  find(conversationId: string, replyId: string): MemoryReply | undefined;
  /** Buffered replies after the cursor: all of them when the cursor is of another epoch. */
  repliesAfter(conversationId: string, after: ReplyCursor): MemoryReply[];
  /** The cursor a client holding `after` is at now (of this epoch; seq 0 when `after` is of another). */
  cursorAfter(after: ReplyCursor, replies: readonly MemoryReply[]): string;
  /** Registers a listener; returns the function that removes it. */
  listen(conversationId: string, listener: (event: WebEvent) => void): () => void;
  /** Tells every listener the channel stopped. */
  closeAll(): void;
}

interface Conversation {
  replies: MemoryReply[];
  listeners: Set<(event: WebEvent) => void>;
}

const DEFAULTS = { maxRepliesPerConversation: 200, maxConversations: 10_000 } satisfies Required<ConversationStoreOptions>;

/** Creates an empty conversation store. */
export function createConversationStore(options: ConversationStoreOptions = {}): ConversationStore {
  const resolved = { ...DEFAULTS, ...options };
  const conversations = new Map<string, Conversation>();
  const epoch = randomBytes(6).toString('hex');
  let lastSeq = 0;
  const current = (after: ReplyCursor): boolean => after.epoch === undefined || after.epoch === epoch;

  const get = (id: string): Conversation => {
    let conversation = conversations.get(id);
    if (conversation) {
      conversations.delete(id); // re-insert: Map order is our LRU order
    } else {
      conversation = { replies: [], listeners: new Set() };
    }
    conversations.set(id, conversation);
    evict();
    return conversation;
  };
  const evict = (): void => {
    for (const [id, conversation] of conversations) {
      if (conversations.size <= resolved.maxConversations) return;
      if (conversation.listeners.size === 0) conversations.delete(id);
    }
  };
  const notify = (conversation: Conversation, event: WebEvent): void => {
    for (const listener of [...conversation.listeners]) listener(event);
  };

  return {
    epoch,
    append(conversationId, text, format, extras = {}) {
      const conversation = get(conversationId);
      const { replyId, liveReplyId, choices, edits } = extras;
      const earlier = edits ? conversation.replies.find((reply) => reply.edits === edits) : undefined;
      if (earlier) return earlier;
      const seq = ++lastSeq;
      const reply: MemoryReply = {
        id: `web:${conversationId}:${epoch}:${seq}`, cursor: formatCursor({ epoch, seq }), text, format, at: Date.now(),
        ...(replyId ? { replyId } : {}), ...(liveReplyId ? { liveReplyId } : {}), ...(choices && choices.length > 0 ? { choices: [...choices] } : {}), ...(edits ? { edits } : {}), epoch, seq,
      };
      conversation.replies.push(reply);
      if (conversation.replies.length > resolved.maxRepliesPerConversation) conversation.replies.shift();
      notify(conversation, { type: 'message', reply });
      return reply;
    },
    typing(conversationId) {
      const conversation = conversations.get(conversationId);
      if (conversation) notify(conversation, { type: 'typing' });
    },
    find(conversationId, replyId) {
      return conversations.get(conversationId)?.replies.find((reply) => reply.id === replyId);
    },
    repliesAfter(conversationId, after) {
      const replies = conversations.get(conversationId)?.replies ?? [];
      return current(after) ? replies.filter((reply) => reply.seq > after.seq) : [...replies];
    },
    cursorAfter(after, replies) {
      const last = replies.at(-1);
      return formatCursor({ epoch, seq: last ? last.seq : current(after) ? after.seq : 0 });
    },
    listen(conversationId, listener) {
      const conversation = get(conversationId);
      conversation.listeners.add(listener);
      return () => conversation.listeners.delete(listener);
    },
    closeAll() {
      for (const conversation of conversations.values()) notify(conversation, { type: 'closed' });
    },
  };
}

/** `<epoch>:<seq>`. */
export function formatCursor(cursor: Required<ReplyCursor>): string {
  return `${cursor.epoch}:${cursor.seq}`;
}

/** Parses `<epoch>:<seq>` or a bare `<seq>`; anything else (or nothing) is `fallback`. */
export function parseCursor(value: string | undefined, fallback: ReplyCursor = { seq: 0 }): ReplyCursor {
  const match = value?.trim().match(/^(?:([A-Za-z0-9_-]{1,64}):)?(\d{1,15})$/);
  if (!match) return fallback;
  return match[1] === undefined ? { seq: Number(match[2]) } : { epoch: match[1], seq: Number(match[2]) };
}
