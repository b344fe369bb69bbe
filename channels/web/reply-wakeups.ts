/**
 * The shared wake-ups of the Redis reply store: one subscriber connection per store, on the
 * channel where every append publishes its conversation id; waiting reads register by
 * conversation and are woken by those ids (then they read the stream again).
 */
import { duplicateRedis, type RedisClient } from '../../src/redis/client.js';

/** One registered wait: `woken` resolves true on a wake-up, false on timeout, abort or close. */
export interface ReplyWait {
  woken: Promise<boolean>;
  cancel(): void;
}

/** See the module comment. */
export class ReplyWakeups {
  private readonly waits = new Map<string, Set<(woken: boolean) => void>>();
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
   * Registers a wait for a reply to `conversationId`, subscribing first if this is the first.
   * `@throws` when the subscriber cannot subscribe (Redis down).
   */
  async register(conversationId: string, timeoutMs: number, signal?: AbortSignal): Promise<ReplyWait> {
    await this.subscribe();
    let set = this.waits.get(conversationId);
    if (!set) this.waits.set(conversationId, (set = new Set()));
    const waits = set;
    let settle: (woken: boolean) => void = () => undefined;
    const woken = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => settle(false), Math.max(0, timeoutMs));
      const onAbort = (): void => settle(false);
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
    if (signal?.aborted || this.isClosed) settle(false);
    return { woken, cancel: () => settle(false) };
  }

  /** Ends every wait (woken false) and disconnects the subscriber. */
  close(): void {
    this.isClosed = true;
    this.wakeAll(false);
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
    connection.on('message', (_channel: string, conversationId: string) => this.wake(conversationId, true));
    // After a reconnect every reader reads again: a wake-up may have been missed meanwhile.
    connection.on('ready', () => this.wakeAll(true));
    connection.on('error', () => undefined); // reported by the reads that fail meanwhile
    this.subscribed = connection.subscribe(this.channel).catch((err: unknown) => {
      this.subscribed = undefined;
      this.subscriber = undefined;
      connection.disconnect();
      throw err;
    });
    return this.subscribed;
  }

  private wake(conversationId: string, woken: boolean): void {
    for (const settle of [...(this.waits.get(conversationId) ?? [])]) settle(woken);
  }

  private wakeAll(woken: boolean): void {
    for (const conversationId of [...this.waits.keys()]) this.wake(conversationId, woken);
  }
}
