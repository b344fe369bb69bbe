/**
 * bench/sessions, idle compaction: the share of user turns that waited on a summariser call, with
 * and without compaction while nobody waits (workers/idle-compaction.ts). The sessions of
 * bench/sessions (same traffic, faithful summariser, in-loop compressor at 50%), with a pause before
 * each user message drawn as people pause in chats: log-normal, median 45 s, σ 1.2 (41% of the
 * pauses are a minute or longer). A turn waited when a compaction during it called the summariser;
 * an idle compaction runs in a pause of at least CHATGATE_IDLE_COMPACT_SECONDS (60) when the next
 * request is expected over the line (the request now plus the last turn's growth).
 */
import { ContextCompressor, createCompactionState, countMessageTokens, type ChatMessage } from '../src/index.js';
import { DEFAULT_IDLE_COMPACT_SECONDS, decideIdleCompaction } from '../src/core/compaction/idle.js';
import { makeSummarizer, PLANTED, playTurn, RESERVE, SCENARIOS, SYSTEM, TOOL_SCHEMA_TOKENS } from './sessions.js';
import { Traffic, plantIds, type Scenario } from './traffic.js';
import { printTable, seededRandom } from './util.js';

const PAUSE_MEDIAN_S = 45;
const PAUSE_SIGMA = 1.2;
const THRESHOLD = 0.5;

interface IdleRun {
  turns: number;
  waited: number;
  /** Turns whose wait came at their first model call (what an idle compaction can spare), not inside the tool loop. */
  waitedAtStart: number;
  idleCompactions: number;
  summaryCalls: number;
  longPauses: number;
}

/** Runs every scenario of bench/sessions with idle compaction off and on, and prints the table. */
export async function runIdleCompactionBench(): Promise<void> {
  console.log(`\n## bench/sessions — user turns that waited on a summariser call, without and with idle compaction (${DEFAULT_IDLE_COMPACT_SECONDS} s)`);
  console.log(`pauses before each user message: log-normal, median ${PAUSE_MEDIAN_S} s, σ ${PAUSE_SIGMA}; faithful summariser; in-loop compressor at ${THRESHOLD * 100}%\n`);
  const rows: Array<Array<string | number>> = [];
  for (const scenario of SCENARIOS) {
    for (const idle of [false, true]) {
      const r = await runOne(scenario, idle);
      rows.push([scenario.name, idle ? `on (${DEFAULT_IDLE_COMPACT_SECONDS} s)` : 'off', r.turns, `${((r.longPauses * 100) / r.turns).toFixed(0)}%`, r.waited, `${((r.waited * 100) / r.turns).toFixed(1)}%`, r.waitedAtStart, r.idleCompactions, r.summaryCalls]);
    }
  }
  printTable(['scenario', 'idle compaction', 'user turns', 'pauses ≥ 60 s', 'turns that waited', 'share waited', 'of them at the first call', 'idle compactions', 'summariser calls'], rows);
}

async function runOne(scenario: Scenario, idle: boolean): Promise<IdleRun> {
  const traffic = new Traffic(seededRandom(42), scenario);
  const plants = plantIds(scenario.turns, PLANTED, seededRandom(7));
  const pauses = seededRandom(11);
  const tally = { in: 0, out: 0 };
  let calls = 0;
  const summarizer = makeSummarizer('faithful', tally);
  const compressor = new ContextCompressor({
    contextWindow: scenario.window, reservedOutputTokens: RESERVE, threshold: THRESHOLD,
    summarizer: { summarize: async (r) => { calls++; return summarizer.summarize(r); } },
  });
  const session = { history: [SYSTEM] as ChatMessage[] };
  let state = createCompactionState();
  const run: IdleRun = { turns: scenario.turns, waited: 0, waitedAtStart: 0, idleCompactions: 0, summaryCalls: 0, longPauses: 0 };
  const request = () => countMessageTokens(session.history) + TOOL_SCHEMA_TOKENS;
  const compact = async (requestTokens: number): Promise<void> => {
    const result = await compressor.compress(session.history, { requestTokens, state });
    state = result.state;
    if (result.outcome !== 'noop' && result.outcome !== 'aborted') session.history = result.messages;
  };
  let growth = 0;
  for (let turn = 0; turn < scenario.turns; turn++) {
    const pauseS = PAUSE_MEDIAN_S * Math.exp(PAUSE_SIGMA * normal(pauses));
    if (pauseS >= DEFAULT_IDLE_COMPACT_SECONDS) run.longPauses++;
    const before = request();
    if (idle && turn > 0 && pauseS >= DEFAULT_IDLE_COMPACT_SECONDS) {
      const decision = decideIdleCompaction({ messageCount: session.history.length - 1, requestTokens: before, expectedGrowthTokens: growth, contextWindow: scenario.window, threshold: THRESHOLD, reservedOutputTokens: RESERVE });
      if (decision.compact && compressor.shouldCompress(decision.nextRequestTokens, state)) {
        const callsBefore = calls;
        await compact(decision.nextRequestTokens);
        if (calls > callsBefore) run.idleCompactions++;
      }
    }
    const start = request();
    const callsBefore = calls;
    let first = true;
    let atStart = false;
    await playTurn(session, turn, plants, traffic, scenario, async () => {
      const tokens = request();
      const callsNow = calls;
      if (compressor.shouldCompress(tokens, state)) await compact(tokens);
      if (first && calls > callsNow) atStart = true;
      first = false;
    });
    if (calls > callsBefore) run.waited++;
    if (atStart) run.waitedAtStart++;
    growth = request() - start;
  }
  run.summaryCalls = calls;
  return run;
}

/** A standard normal draw (Box–Muller). */
function normal(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}
