import type { CompactionLayer } from '../src/core/session-figures.js';
import { automaticCompactionNotice } from '../src/core/compaction/compaction-text.js';
import { runCompactionStep } from '../src/session/compaction-step.js';
import { TURN_NOTICES } from './notices.js';
import { ensureLease, notesOf, type Loop } from './turn-loop.js';

/** Compacts when the model asked for it or the request reached the trigger. @returns true when it ran. */
export async function compactIfNeeded(loop: Loop, overhead: number): Promise<boolean> {
  const requestTokens = loop.turn.requestTokens(overhead);
  if (loop.manual) {
    const focus = loop.manual.focus;
    loop.manual = null;
    await compact(loop, 'manual', true, requestTokens, focus);
    return true;
  }
  if (loop.compactionsSinceCall > 0) return false;
  if (!loop.deps.compressor.shouldCompress(requestTokens, loop.turn.compaction)) return false;
  const before = loop.turn.meta.version;
  await compact(loop, 'in-loop', false, requestTokens);
  // A noop leaves the projection as it was: go on with the call instead of compacting again.
  return loop.turn.meta.version !== before && loop.turn.compaction.lastOutcome !== 'noop' && loop.turn.compaction.lastOutcome !== 'aborted';
}

/** One compaction of the turn's projection under the lease; its notice (if any) joins the turn's notices. */
export async function compact(loop: Loop, layer: CompactionLayer, force: boolean, requestTokens: number, focus?: string): Promise<void> {
  await ensureLease(loop, 'compaction');
  const result = await runCompactionStep({
    compressor: loop.deps.compressor, turn: loop.turn, system: loop.system, requestTokens, layer, force, focus,
    summaryModel: loop.options.summaryModel ?? loop.deps.llm.model, model: loop.deps.llm.model, logger: loop.log, prices: loop.options.prices, metrics: loop.deps.metrics,
    notes: () => notesOf(loop).list(),
  });
  loop.compactionsSinceCall++;
  const notice = layer === 'manual' || loop.options.compactionNotice === false ? null : automaticCompactionNotice(result);
  if (notice) loop.notices.push(notice);
  if (result.pausedNow) loop.notices.push(TURN_NOTICES.paused);
}
