/**
 * The web chat's reply store port, with two implementations: the in-memory store (default; one
 * gateway, replies lost on restart) adapted here, and the Redis store in `redis-replies.ts` (one
 * stream per conversation, shared by every gateway and kept across restarts).
 */
import { createConversationStore, parseCursor, type ConversationStoreOptions, type WebReply } from './conversations.js';
import type { MessageChoice } from '../../src/core/inbound.js';

/** What {@link ReplyStore.read} returns. */
export interface ReplyPage {
  /** Replies after the cursor, oldest first. */
  replies: WebReply[];
  /** The cursor to read from next. */
  next: string;
  /** In-memory store only: its boot id. */
  epoch?: string;
}

/** Options of {@link ReplyStore.read}. */
export interface ReadOptions {
  /** How long to wait for a reply when none is there yet; 0 = answer at once. */
  timeoutMs: number;
  /** Ends the wait early (the page went away). */
  signal?: AbortSignal;
}

/** An in-process hint for live listeners: a typing hint, or that the channel stopped. */
export type ReplyHint = { type: 'typing' } | { type: 'closed' };

/** Where the web chat keeps its replies; see the module comment. */
export interface ReplyStore {
  /**
   * Appends a reply; every reader of the conversation (on any gateway sharing the store) sees it.
   * With `deliveryId`, the Redis store appends once per id (a retried delivery gets the first reply back).
   * An `edits` reply is appended once per edited reply in either store (see {@link WebReply.edits}).
   */
  append(conversationId: string, text: string, format: WebReply['format'], extras?: AppendExtras): Promise<WebReply>;
  /** The reply with id `replyId` while the conversation's buffer holds it; undefined after. */
  find(conversationId: string, replyId: string): Promise<WebReply | undefined>;
  /** The reply appended under delivery id `deliveryId` (`<reply id>#<chunk index>`) while the buffer holds it; undefined after. */
  findDelivered(conversationId: string, deliveryId: string): Promise<WebReply | undefined>;
  /** Replies after `after` (a cursor; absent or unknown = the whole buffer), waiting up to `timeoutMs` for one. */
  read(conversationId: string, after: string | undefined, options: ReadOptions): Promise<ReplyPage>;
  /** Tells this process's hint listeners of the conversation that the bot is typing (best effort, not stored). */
  typing(conversationId: string): void;
  /** Registers a hint listener; returns the function that removes it. */
  listen(conversationId: string, listener: (hint: ReplyHint) => void): () => void;
  /** Ends every wait and tells every hint listener the channel stopped. */
  closeAll(): void;
  /** Reads waiting for a reply right now (long polls and SSE streams between replies). */
  waiting(): number;
  /** Whether `append` stores each `deliveryId` once (the Redis store: it is its own delivery ledger). */
  readonly appendsOncePerDeliveryId: boolean;
}

/** What {@link ReplyStore.append} may add to a reply besides its text. */
export interface AppendExtras {
  /** The chunk's stable delivery id (`<reply id>#<chunk index>`). */
  deliveryId?: string;
  /** The live reply this reply ends. */
  liveReplyId?: string;
  /** Buttons under the reply. */
  choices?: readonly MessageChoice[];
  /** The id of the reply whose text this one replaces (its buttons removed). */
  edits?: string;
}

/** Whether `value` is a cursor of either store: `<epoch>:<seq>`, a bare `<seq>`, or a stream id `<ms>-<n>`. */
export function isCursor(value: string): boolean {
  return /^(?:(?:[A-Za-z0-9_-]{1,64}:)?\d{1,15}|\d{1,20}-\d{1,20})$/.test(value.trim());
}

/** The reply a chunk's delivery id (`<reply id>#<chunk index>`) belongs to. */
export function replyIdOf(deliveryId: string | undefined): string | undefined {
  if (!deliveryId) return undefined;
  const hash = deliveryId.lastIndexOf('#');
  return hash > 0 ? deliveryId.slice(0, hash) : deliveryId;
}

/** The in-memory {@link ReplyStore} (the default): cursors are `<epoch>:<seq>`. */
export function createMemoryReplyStore(options: ConversationStoreOptions = {}): ReplyStore {
  const store = createConversationStore(options);
  const page = (conversationId: string, after: string | undefined): ReplyPage => {
    const cursor = parseCursor(after);
    const replies = store.repliesAfter(conversationId, cursor);
    return { replies, next: store.cursorAfter(cursor, replies), epoch: store.epoch };
  };
  let waiting = 0;
  return {
    appendsOncePerDeliveryId: false,
    async append(conversationId, text, format, extras = {}) {
      const { deliveryId, ...rest } = extras;
      return store.append(conversationId, text, format, { ...rest, replyId: replyIdOf(deliveryId) });
    },
    async find(conversationId, replyId) {
      return store.find(conversationId, replyId);
    },
    async findDelivered(conversationId, deliveryId) {
      // The memory store keeps no chunk index: the reply's first chunk stands for it.
      const replyId = replyIdOf(deliveryId);
      return store.repliesAfter(conversationId, parseCursor(undefined)).find((reply) => reply.replyId === replyId && !reply.edits);
    },
    async read(conversationId, after, options) {
      const ready = page(conversationId, after);
      if (ready.replies.length > 0 || options.timeoutMs <= 0 || options.signal?.aborted) return ready;
      waiting++;
      await new Promise<void>((resolve) => {
        let finished = false;
        const done = (): void => {
          if (finished) return;
          finished = true;
          clearTimeout(timer);
          unlisten();
          options.signal?.removeEventListener('abort', done);
          waiting--;
          resolve();
        };
        const timer = setTimeout(done, options.timeoutMs);
        const unlisten = store.listen(conversationId, (event) => {
          if (event.type !== 'typing') done();
        });
        options.signal?.addEventListener('abort', done);
      });
      return page(conversationId, after);
    },
    typing: (conversationId) => store.typing(conversationId),
    listen(conversationId, listener) {
      return store.listen(conversationId, (event) => {
        if (event.type !== 'message') listener(event);
      });
    },
    closeAll: () => store.closeAll(),
    waiting: () => waiting,
  };
}
