import type { EventEmitter } from 'node:events';

/** How {@link pollUntil} checks: its pause between checks, its deadline, and what it names on timeout. */
export interface PollOptions {
  /** Pause between two checks, in ms; 0 yields to the event loop (`setImmediate`). Default 5. */
  intervalMs?: number;
  /** Give up after this many ms with an error naming `what`. Default 30,000 (under the test timeout). */
  timeoutMs?: number;
  /** What is awaited, for the timeout's error. Default "condition". */
  what?: string;
}

/** A promise and the function that resolves it: a gate a test opens, or a point a handler marks as reached. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => { open = resolve; });
  return { promise, open };
}

/**
 * Resolves once `condition` holds, checking now and on every `event` of `emitter` (the fakes emit
 * `call` on each request they record). Never a fixed sleep: the test's timeout bounds the wait.
 */
export function waitUntil(emitter: EventEmitter, event: string, condition: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (!condition()) return;
      emitter.off(event, check);
      resolve();
    };
    emitter.on(event, check);
    check();
  });
}

/**
 * Resolves once `check` holds, checking now and then every `intervalMs`. For state that emits no event
 * (a lease key, a blocked client, a cluster's gossip); prefer {@link waitUntil} where there is one.
 * @throws Error `<what> not met within <timeoutMs> ms` when the deadline passes.
 */
export async function pollUntil(check: () => boolean | Promise<boolean>, options: PollOptions = {}): Promise<void> {
  const { intervalMs = 5, timeoutMs = 30_000, what = 'condition' } = options;
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((resolve) => (intervalMs === 0 ? setImmediate(resolve) : setTimeout(resolve, intervalMs)));
  }
}
