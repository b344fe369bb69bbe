import type { CompactionOutcome, CompactionState } from './compaction-types.js';
import { extractFacts } from './facts.js';
import { FactOrigin, type FactLedger, type FactRecord } from './fact-ledger.js';

/** A fresh per-session compaction state. */
export function createCompactionState(): CompactionState {
  return {
    version: 2,
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

/**
 * Accepts a state loaded from storage (possibly older or partial) and returns a complete copy.
 * Version 1 ledgers (fact → logical time) migrate to records of unknown origin (labelled values)
 * with their shape re-read; a version 1 session already compacted trusts its first summary block once.
 */
export function toCompactionState(value: unknown): CompactionState {
  const base = createCompactionState();
  if (!value || typeof value !== 'object') return base;
  const loaded = value as Partial<Omit<CompactionState, 'version'>> & { version?: number; facts?: Record<string, unknown> };
  const legacy = loaded.version !== 2;
  return {
    ...base,
    ...loaded,
    version: 2,
    facts: toLedger(loaded.facts),
    noteFacts: { ...(loaded.noteFacts ?? {}) },
    mined: legacy ? null : (loaded.mined ?? null),
    summary: legacy ? ((loaded.compactions ?? 0) > 0 ? { legacy: true } : null) : (loaded.summary ?? null),
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
    else if (typeof value === 'number') ledger[fact] = [value, 0, FactOrigin.labelled, 0, legacyShape(fact)];
  }
  return ledger;
}

/** A version 1 fact's shape: strong if it still reads as an identifier on its own, else weak. */
function legacyShape(fact: string): 0 | 2 {
  return extractFacts(fact).includes(fact) && !/\d{2}:\d{2}:\d{2}/.test(fact) ? 2 : 0;
}
