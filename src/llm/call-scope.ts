/**
 * Whom a model call is made for, carried in an AsyncLocalStorage so a call deep inside a turn or a
 * compaction (the summariser knows no session) counts for the user and chat that caused it. The
 * budget wrapper (src/budget/guard.ts) reads it; callers set it where they know the subject.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** The subject of the model calls made inside {@link runWithCallScope}. */
export interface CallScope {
  /** `<channel>:<userId>`; absent when no user asked (the CLI's `chatgate compact`). */
  user?: string;
  /** The session id. */
  chat?: string;
  /**
   * Present inside a turn: what its calls have spent so far (the per-turn caps), and where the
   * user's notices go (a limit at the notice share).
   */
  turn?: { usedMicro: number; usedTokens: number; onNotice: (text: string) => void };
}

const scopes = new AsyncLocalStorage<CallScope>();

/** Runs `fn` with its model calls counted for `scope`. */
export function runWithCallScope<T>(scope: CallScope, fn: () => Promise<T>): Promise<T> {
  return scopes.run(scope, fn);
}

/** The scope of the running call, if any was set. */
export function currentCallScope(): CallScope | undefined {
  return scopes.getStore();
}

/** Runs `fn` in `fallback` unless a scope is set already (a turn's compaction keeps its turn's). */
export function withDefaultCallScope<T>(fallback: CallScope, fn: () => Promise<T>): Promise<T> {
  return scopes.getStore() ? fn() : scopes.run(fallback, fn);
}
