import type { ChatMessage } from '../messages.js';
import type { MinedFacts, MessageScan } from './compaction-types.js';

/**
 * What the engine has derived from one message object: its token count, its fact scan and what
 * they became. Filled lazily, one field per deriving module. Messages are treated as immutable,
 * so a memo never goes stale.
 */
export interface MessageMemo {
  /** Tokens the message costs in a request, framing included, in `tokensEncoding`. */
  tokens: number;
  /** The encoding `tokens` was counted in (an `EncodingName` of ../tokens.ts); undefined until counted. */
  tokensEncoding: string | undefined;
  /** The facts of its text and tool-call arguments (facts.ts). */
  scan: MessageScan | undefined;
  /** Its distinct facts, the strongest shapes first (facts.ts). */
  facts: readonly string[] | undefined;
  /** Its facts with their origin, as the ledger takes them (fact-ledger.ts). */
  mined: MinedFacts | undefined;
}

/**
 * The memos of message objects: one store per owner (a {@link TokenCounter} of ../tokens.ts holds
 * one), so what is remembered lives as long as its owner and no longer than its messages.
 */
export class MessageMemos {
  // One entry per message, not one per module: inserting a fresh object into a WeakMap costs about as
  // much as scanning a short message for facts, and a never-seen history has thousands of them.
  private readonly memos = new WeakMap<ChatMessage, MessageMemo>();

  /** The memo of a message object, created empty on first use. */
  of(message: ChatMessage): MessageMemo {
    let memo = this.memos.get(message);
    if (memo === undefined) {
      // Every field set at once: one object shape for every memo.
      memo = { tokens: 0, tokensEncoding: undefined, scan: undefined, facts: undefined, mined: undefined };
      this.memos.set(message, memo);
    }
    return memo;
  }

  /** The memo of a message object if it has one: a look that creates nothing. */
  peek(message: ChatMessage): MessageMemo | undefined {
    return this.memos.get(message);
  }
}
