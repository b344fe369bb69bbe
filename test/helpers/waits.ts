import type { EventEmitter } from 'node:events';

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
