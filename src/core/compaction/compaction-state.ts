import type { CompactionOutcome, CompactionState, FactLedger, FactRecord } from './compaction-types.js';

/** A fresh per-session compaction state. */
export function createCompactionState(): CompactionState {
  return {
    version: COMPACTION_STATE_VERSION,
    compactions: 0,
    ineffectiveStreak: 0,
    paused: false,
    summarizerFailures: 0,
    cooldownUntilMs: 0,
    cooldownAborts: false,
    facts: {},
    factClock: 0,
    turnClock: 0,
    noteFacts: {},
    mined: null,
    summary: null,
    pinsOmitted: 0,
    lastOutcome: null,
  };
}

/** The format version of {@link CompactionState} this engine reads and writes. */
export const COMPACTION_STATE_VERSION = 2;

/**
 * Accepts a state loaded from storage (possibly partial: missing fields take their fresh values)
 * and returns a complete copy; nothing (null, undefined) gives a fresh state.
 * @throws Error when the state is of another format version than {@link COMPACTION_STATE_VERSION}
 * (another chatgate version wrote it): nothing is guessed.
 */
export function toCompactionState(value: unknown): CompactionState {
  const base = createCompactionState();
  if (value === null || value === undefined) return base;
  const loaded = value as Partial<CompactionState> & { facts?: Record<string, unknown> };
  if (typeof value !== 'object' || loaded.version !== COMPACTION_STATE_VERSION) {
    const found = typeof value === 'object' ? JSON.stringify(loaded.version) ?? 'none' : `none (a ${typeof value})`;
    throw new Error(`compaction state has format version ${found}; this chatgate reads version ${COMPACTION_STATE_VERSION}: run the chatgate version that wrote it`);
  }
  return {
    ...base,
    ...loaded,
    facts: toLedger(loaded.facts),
    noteFacts: { ...(loaded.noteFacts ?? {}) },
    mined: loaded.mined ?? null,
    summary: loaded.summary ?? null,
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

function toLedger(facts: Record<string, unknown> | undefined): FactLedger {
  const ledger: FactLedger = {};
  for (const [fact, value] of Object.entries(facts ?? {})) {
    if (Array.isArray(value) && value.length === 5 && value.every((n) => typeof n === 'number')) ledger[fact] = value as FactRecord;
  }
  return ledger;
}
