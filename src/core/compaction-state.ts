import type { CompactionOutcome, CompactionState } from './compaction-types.js';

/** A fresh per-session compaction state. */
export function createCompactionState(): CompactionState {
  return {
    version: 1,
    compactions: 0,
    ineffectiveStreak: 0,
    paused: false,
    summarizerFailures: 0,
    cooldownUntilMs: 0,
    cooldownAborts: false,
    facts: {},
    factClock: 0,
    pinsOmitted: 0,
    lastOutcome: null,
  };
}

/** Accepts a state loaded from storage (possibly older or partial) and returns a complete copy. */
export function toCompactionState(value: unknown): CompactionState {
  const base = createCompactionState();
  if (!value || typeof value !== 'object') return base;
  const loaded = value as Partial<CompactionState>;
  return {
    ...base,
    ...loaded,
    version: 1,
    facts: { ...(loaded.facts ?? {}) },
  };
}

/** Records the effect of a compaction that changed the projection; returns the new state and whether it paused now. */
export function recordCompaction(
  state: CompactionState,
  outcome: CompactionOutcome,
  effective: boolean,
): { state: CompactionState; pausedNow: boolean } {
  const ineffectiveStreak = effective ? 0 : state.ineffectiveStreak + 1;
  const paused = effective ? false : state.paused || ineffectiveStreak >= 2;
  return {
    state: { ...state, compactions: state.compactions + 1, ineffectiveStreak, paused, lastOutcome: outcome },
    pausedNow: paused && !state.paused,
  };
}
