import { afterEach, beforeEach } from 'vitest';

/**
 * Registers, in the calling file or `describe`, a `beforeEach` that starts a fake platform server
 * with `start`, and an `afterEach` that runs `cleanup` (closing what the test opened against the
 * fake: a stack, a channel) and then closes the fake. Returns the running test's fake.
 * @throws Error from the getter when called outside a test of that file.
 */
export function useFakeServer<F extends { close(): Promise<void> }>(start: () => Promise<F>, cleanup: () => Promise<void> | void = () => undefined): () => F {
  let fake: F | undefined;
  beforeEach(async () => {
    fake = await start();
  });
  afterEach(async () => {
    await cleanup();
    await fake?.close();
    fake = undefined;
  });
  return () => {
    if (!fake) throw new Error('the fake server runs only inside a test of the file that started it');
    return fake;
  };
}
