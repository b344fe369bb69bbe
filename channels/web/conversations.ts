/**
 * In-memory conversations of the web chat: a bounded buffer of outgoing messages per
 * conversation, numbered by `seq`, and listeners (SSE streams, long polls) woken on each event.
 */

/** One message from the bot to a web conversation. */
export interface WebReply {
  /** Position in the conversation, from 1; clients resume with `after=<seq>`. */
  seq: number;
  /** Platform message id: `web:<conversationId>:<seq>`. */
  id: string;
  text: string;
  /** `markdown` for formatted replies, `text` for plain ones. */
  format: 'markdown' | 'text';
  /** ms since epoch. */
  at: number;
}

/** What a listener is told: a new reply, a typing hint, or that the channel stopped. */
export type WebEvent = { type: 'message'; reply: WebReply } | { type: 'typing' } | { type: 'closed' };

/** Options of {@link createConversationStore}. */
export interface ConversationStoreOptions {
  /** Replies kept per conversation for replay. Default 200. */
  maxRepliesPerConversation?: number;
  /** Conversations kept; the least recently used is dropped beyond. Default 10 000. */
  maxConversations?: number;
}

/** The store; see the module comment. */
export interface ConversationStore {
  /** Appends a reply and wakes the conversation's listeners. */
  append(conversationId: string, text: string, format: WebReply['format']): WebReply;
  /** Wakes the listeners with a typing hint (not stored). */
  typing(conversationId: string): void;
  /** Buffered replies with `seq > after`. */
  repliesAfter(conversationId: string, after: number): WebReply[];
  /** Registers a listener; returns the function that removes it. */
  listen(conversationId: string, listener: (event: WebEvent) => void): () => void;
  /** Tells every listener the channel stopped. */
  closeAll(): void;
}

interface Conversation {
  seq: number;
  replies: WebReply[];
  listeners: Set<(event: WebEvent) => void>;
}

const DEFAULTS = { maxRepliesPerConversation: 200, maxConversations: 10_000 } satisfies Required<ConversationStoreOptions>;

/** Creates an empty conversation store. */
export function createConversationStore(options: ConversationStoreOptions = {}): ConversationStore {
  const resolved = { ...DEFAULTS, ...options };
  const conversations = new Map<string, Conversation>();

  const get = (id: string): Conversation => {
    let conversation = conversations.get(id);
    if (conversation) {
      conversations.delete(id); // re-insert: Map order is our LRU order
    } else {
      conversation = { seq: 0, replies: [], listeners: new Set() };
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
    append(conversationId, text, format) {
      const conversation = get(conversationId);
      const seq = ++conversation.seq;
      const reply: WebReply = { seq, id: `web:${conversationId}:${seq}`, text, format, at: Date.now() };
      conversation.replies.push(reply);
      if (conversation.replies.length > resolved.maxRepliesPerConversation) conversation.replies.shift();
      notify(conversation, { type: 'message', reply });
      return reply;
    },
    typing(conversationId) {
      const conversation = conversations.get(conversationId);
      if (conversation) notify(conversation, { type: 'typing' });
    },
    repliesAfter(conversationId, after) {
      return (conversations.get(conversationId)?.replies ?? []).filter((reply) => reply.seq > after);
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
