/**
 * The shared wake-ups of the Redis reply store: one subscriber connection per store, on the
 * channel where every append publishes its conversation id — with the appended entry itself after
 * a new append (`<conversation id> <stream id> <fields as JSON>`); waiting reads register by
 * conversation and are woken by those messages (with the entry they need not read the stream again).
 * The subscriber also remembers the last entry id it heard of per conversation, while it has heard
 * every append since (forgotten on a reconnect, a wake-up without an id, and a wait that timed out):
 * a read whose cursor is that id knows the stream has nothing after it, and only waits.
 */
import { duplicateRedis, type RedisClient } from '../../src/redis/client.js';

/** A stream entry as XREAD answers it: `[id, [field, value, …]]`. */
export type StreamEntry = [string, string[]];

/** Why a wait ended with news: `entry` is the entry just appended, when the wake-up carried it. */
export interface Wakeup {
  entry?: StreamEntry;
}

/** One registered wait: `woken` resolves to a {@link Wakeup} on a wake-up, null on timeout, abort or close. */
export interface ReplyWait {
  woken: Promise<Wakeup | null>;
  cancel(): void;
}

/** What a wake-up without news of its own means: read the stream again. */
const READ_AGAIN: Wakeup = {};
/** Bounds the conversations whose last entry id is remembered (the most recently appended to). */
const MAX_REMEMBERED = 10_000;
/** A Redis stream id, `<ms>-<n>`. */
export const STREAM_ID_RE = /^\d{1,20}-\d{1,20}$/;

/** See the module comment. */
export class ReplyWakeups {
  private readonly waits = new Map<string, Set<(woken: Wakeup | null) => void>>();
  /** Conversation → the id of the last append heard of, while every append since was heard. */
  private readonly latest = new Map<string, string>();
  private subscriber: RedisClient | undefined;
  private subscribed: Promise<unknown> | undefined;
  private isClosed = false;
  private count = 0;

  constructor(private readonly redis: RedisClient, private readonly channel: string, private readonly connectionName: string) {}

  /** True once {@link ReplyWakeups.close} ran: no wait is registered any more. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Waits registered right now. */
  waiting(): number {
    return this.count;
  }

  /**
   * The stream id of the last append to `conversationId` this subscriber heard of, when it has heard
   * every append since (so nothing in the stream comes after it); undefined when it does not know.
   */
  lastAppended(conversationId: string): string | undefined {
    return this.latest.get(conversationId);
  }

  /**
   * Registers a wait for a reply to `conversationId`, subscribing first if this is the first.
   * `@throws` when the subscriber cannot subscribe (Redis down).
   */
  async register(conversationId: string, timeoutMs: number, signal?: AbortSignal): Promise<ReplyWait> {
    await this.subscribe();
    let set = this.waits.get(conversationId);
    if (!set) this.waits.set(conversationId, (set = new Set()));
    const waits = set;
    let settle: (woken: Wakeup | null) => void = () => undefined;
    const woken = new Promise<Wakeup | null>((resolve) => {
      const timer = setTimeout(() => {
        // A wait that heard nothing reads the stream next time: a wake-up lost in transit costs one wait, never more.
        this.latest.delete(conversationId);
        settle(null);
      }, Math.max(0, timeoutMs));
      const onAbort = (): void => settle(null);
      settle = (value) => {
        if (!waits.delete(settle)) return;
        if (waits.size === 0 && this.waits.get(conversationId) === waits) this.waits.delete(conversationId);
        this.count--;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(value);
      };
      waits.add(settle);
      this.count++;
      signal?.addEventListener('abort', onAbort);
    });
    if (signal?.aborted || this.isClosed) settle(null);
    return { woken, cancel: () => settle(null) };
  }

  /** Ends every wait (woken null) and disconnects the subscriber. */
  close(): void {
    this.isClosed = true;
    this.wakeAll(null);
    this.subscriber?.disconnect();
    this.subscriber = undefined;
    this.subscribed = undefined;
  }

  private subscribe(): Promise<unknown> {
    if (this.subscribed) return this.subscribed;
    if (this.isClosed) return Promise.resolve();
    // Fails fast while Redis is down (the read answers 503); once subscribed, ioredis subscribes again after a reconnect.
    const connection = duplicateRedis(this.redis, { connectionName: this.connectionName, maxRetriesPerRequest: 1 });
    this.subscriber = connection;
    connection.on('message', (_channel: string, message: string) => this.onMessage(message));
    // After a reconnect every reader reads again: a wake-up may have been missed meanwhile.
    connection.on('ready', () => {
      this.latest.clear();
      this.wakeAll(READ_AGAIN);
    });
    connection.on('error', () => undefined); // reported by the reads that fail meanwhile
    this.subscribed = connection.subscribe(this.channel).catch((err: unknown) => {
      this.subscribed = undefined;
      this.subscriber = undefined;
      connection.disconnect();
      throw err;
    });
    return this.subscribed;
  }

  /** `<conversation id>` (read again) or `<conversation id> <stream id> <fields JSON>` (the new entry). */
  private onMessage(message: string): void {
    const space = message.indexOf(' ');
    if (space < 0) {
      this.latest.delete(message);
      this.wake(message, READ_AGAIN);
      return;
    }
    const conversationId = message.slice(0, space);
    const rest = message.slice(space + 1);
    const id = rest.slice(0, rest.indexOf(' '));
    this.latest.delete(conversationId);
    if (STREAM_ID_RE.test(id)) {
      if (this.latest.size >= MAX_REMEMBERED) this.latest.delete(this.latest.keys().next().value as string);
      this.latest.set(conversationId, id);
    }
    if (!this.waits.has(conversationId)) return; // nobody here waits for it: not worth parsing
    this.wake(conversationId, wakeupOf(rest));
  }

  private wake(conversationId: string, woken: Wakeup | null): void {
    for (const settle of [...(this.waits.get(conversationId) ?? [])]) settle(woken);
  }

  private wakeAll(woken: Wakeup | null): void {
    for (const conversationId of [...this.waits.keys()]) this.wake(conversationId, woken);
  }
}

/** `<stream id> <fields JSON>` as a wake-up with its entry; anything malformed is a plain wake-up (read again). */
function wakeupOf(rest: string): Wakeup {
  const space = rest.indexOf(' ');
  try {
    const fields: unknown = JSON.parse(rest.slice(space + 1));
    if (STREAM_ID_RE.test(rest.slice(0, space)) && Array.isArray(fields) && fields.every((field) => typeof field === 'string')) return { entry: [rest.slice(0, space), fields as string[]] };
  } catch {
    // fall through: read the stream
  }
  return READ_AGAIN;
}
