/**
 * bench/sessions: long scripted sessions with realistic identifier noise (bench/traffic.ts) through a
 * simulated agent loop with the in-loop compressor at 50%, against three fake summarisers (faithful,
 * drops 30%, one vague sentence). Prints, per scenario and summariser: planted identifiers present at
 * probes every 50 turns and at the end, the pinned section's size, tokens, a cache-weighted cost, and a
 * lower bound (a free perfect compactor) with every run's cost as a multiple of it.
 */
import { ContextCompressor, createCompactionState, countMessageTokens, countTextTokens, extractFacts, type ChatMessage, type Summarizer, type SummaryRequest } from '../src/index.js';
import { messageText } from '../src/core/messages.js';
import { buildSummaryPrompt } from '../src/llm/summarizer.js';
import { toolResultCap } from '../workers/model-request.js';
import { printTable, seededRandom } from './util.js';
import { Traffic, plantIds, type Plant, type Scenario } from './traffic.js';

export const TOOL_SCHEMA_TOKENS = 600;
export const RESERVE = 1000;
export const PLANTED = 44;
const PROBE_EVERY = 50;
/** Prices relative to one uncached input token: cached input, cache-writing input, summariser input and output. */
const PRICE = { cached: 0.1, uncached: 1.25, summaryIn: 1, summaryOut: 5 };
export const SYSTEM: ChatMessage = { role: 'system', content: 'You are a helpful support assistant for an online shop. Use the tools to look things up.' };

type Mode = 'faithful' | 'drops 30%' | 'vague';

export const SCENARIOS: Scenario[] = [
  { name: 'chat + pastes, 300 turns (32k)', window: 32_000, turns: 300, language: 'en', toolShare: 0.12, maxCalls: 2, maxResultWords: 300, pasteShare: 0.08 },
  { name: 'tool-heavy, 150 turns (48k)', window: 48_000, turns: 150, language: 'en', toolShare: 1, maxCalls: 4, maxResultWords: 4500, pasteShare: 0.03 },
  { name: 'multilingual, 200 turns (32k)', window: 32_000, turns: 200, language: 'mixed', toolShare: 0.12, maxCalls: 2, maxResultWords: 300, pasteShare: 0.06 },
];

interface RunStats {
  probes: number[];
  final: number;
  pinnedLines: number[];
  pinnedTokens: number[];
  prompt: number;
  summaryIn: number;
  summaryOut: number;
  cost: number;
  lowerBound: number;
  compactions: number;
  largest: number;
  overWindow: number;
}

/** Runs every scenario with every summariser (and without compaction) and prints the table. */
export async function runSessionsBench(): Promise<void> {
  console.log('\n## bench/sessions — realistic noise, in-loop compressor at 50%, 1,000-token output reserve, 600 tokens of tool schemas');
  console.log(`cost = cached×${PRICE.cached} + uncached×${PRICE.uncached} (prefix shared with the previous request is cached) + summariser in×${PRICE.summaryIn} + out×${PRICE.summaryOut}`);
  console.log('lower bound = a free perfect compactor: system prompt + schemas + one line per planted id so far + the current turn, priced the same way\n');
  const rows: Array<Array<string | number>> = [];
  for (const scenario of SCENARIOS) {
    for (const mode of ['none', 'faithful', 'drops 30%', 'vague'] as const) {
      const r = await runOne(scenario, mode);
      const mean = (v: number[]) => (v.length === 0 ? 0 : v.reduce((a, b) => a + b, 0) / v.length);
      rows.push([
        scenario.name, mode, pct(Math.min(...r.probes)), pct(r.final),
        `${mean(r.pinnedLines).toFixed(0)} / ${Math.max(0, ...r.pinnedLines)}`, `${mean(r.pinnedTokens).toFixed(0)} / ${Math.max(0, ...r.pinnedTokens)}`,
        r.prompt, `${r.summaryIn} / ${r.summaryOut}`, Math.round(r.cost), Math.round(r.lowerBound), `${(r.cost / r.lowerBound).toFixed(2)}×`,
        ((r.compactions * 100) / scenario.turns).toFixed(1), `${(r.largest * 100).toFixed(1)}%`, r.overWindow,
      ]);
    }
  }
  printTable(['scenario', 'summariser', 'planted: worst probe', 'final', 'pinned lines mean/max', 'pinned tokens mean/max', 'prompt tokens', 'summariser in/out', 'cost', 'lower bound', 'cost ÷ lower bound', 'compactions/100 turns', 'largest / window', 'over window'], rows);
}

async function runOne(scenario: Scenario, mode: Mode | 'none'): Promise<RunStats> {
  const random = seededRandom(42);
  const traffic = new Traffic(random, scenario);
  const plants = plantIds(scenario.turns, PLANTED, seededRandom(7));
  const tally = { in: 0, out: 0 };
  const compressor = new ContextCompressor({ contextWindow: scenario.window, summarizer: makeSummarizer(mode === 'none' ? 'faithful' : mode, tally), reservedOutputTokens: RESERVE });
  const stats: RunStats = { probes: [], final: 0, pinnedLines: [], pinnedTokens: [], prompt: 0, summaryIn: 0, summaryOut: 0, cost: 0, lowerBound: 0, compactions: 0, largest: 0, overWindow: 0 };
  const session = { history: [SYSTEM] as ChatMessage[] };
  let state = createCompactionState();
  let previous: ChatMessage[] = [];
  const lb = new LowerBound();
  const breakdown = { cached: 0, uncached: 0, calls: 0 };
  const call = async (turn: number) => {
    let history = session.history;
    let request = countMessageTokens(history) + TOOL_SCHEMA_TOKENS;
    if (mode !== 'none' && compressor.shouldCompress(request, state)) {
      const result = await compressor.compress(history, { requestTokens: request, state });
      state = result.state;
      if (result.outcome !== 'noop' && result.outcome !== 'aborted') {
        stats.compactions++;
        if (result.summary) recordPinned(stats, result.pinnedFacts);
        history = result.messages;
        session.history = history;
      }
      request = countMessageTokens(history) + TOOL_SCHEMA_TOKENS;
    }
    stats.prompt += request;
    const shared = sharedPrefixTokens(previous, history);
    stats.cost += PRICE.cached * (TOOL_SCHEMA_TOKENS + shared) + PRICE.uncached * (request - TOOL_SCHEMA_TOKENS - shared);
    breakdown.cached += PRICE.cached * (TOOL_SCHEMA_TOKENS + shared);
    breakdown.uncached += PRICE.uncached * (request - TOOL_SCHEMA_TOKENS - shared);
    breakdown.calls++;
    stats.largest = Math.max(stats.largest, request / scenario.window);
    if (request > scenario.window - RESERVE) stats.overWindow++;
    stats.lowerBound += lb.cost(plants.filter((p) => p.turn <= turn), currentTurn(history));
    previous = history.slice();
  };
  for (let turn = 0; turn < scenario.turns; turn++) {
    await playTurn(session, turn, plants, traffic, scenario, () => call(turn));
    if ((turn + 1) % PROBE_EVERY === 0) {
      stats.probes.push(presentShare(previous, plants, turn));
      if (process.env.BENCH_DEBUG === `${scenario.name.slice(0, 4)}${mode}`) {
        const text = previous.map((m) => `${messageText(m)} ${m.role === 'assistant' ? JSON.stringify(m.tool_calls ?? []) : ''}`).join('\n');
        for (const p of plants.filter((p) => p.turn <= turn && !text.includes(p.id))) console.log('probe', turn, 'lost', p.mode, p.id, p.turn, JSON.stringify(state.facts[p.id]));
      }
    }
  }
  stats.final = presentShare(previous, plants, scenario.turns);
  if (process.env.BENCH_DEBUG === `${scenario.name.slice(0, 4)}${mode}`) {
    const text = previous.map((m) => `${messageText(m)} ${m.role === 'assistant' ? JSON.stringify(m.tool_calls ?? []) : ''}`).join('\n');
    for (const p of plants.filter((p) => !text.includes(p.id))) console.log('lost', p.mode, p.id, p.turn, p.recallTurn, JSON.stringify(state.facts[p.id]));
  }
  stats.probes.push(stats.final);
  stats.summaryIn = tally.in;
  stats.summaryOut = tally.out;
  stats.cost += PRICE.summaryIn * tally.in + PRICE.summaryOut * tally.out;
  if (process.env.BENCH_DEBUG === `${scenario.name.slice(0, 4)}${mode}`) console.log('breakdown', JSON.stringify(breakdown), 'summary', PRICE.summaryIn * tally.in + PRICE.summaryOut * tally.out, 'lb', stats.lowerBound, 'calls', breakdown.calls);
  return stats;
}

/** One turn: the user's message (with noise, plants and recalls), a tool round or two, the answer. */
export async function playTurn(session: { history: ChatMessage[] }, turn: number, plants: Plant[], traffic: Traffic, scenario: Scenario, call: () => Promise<void>): Promise<void> {
  const planted = plants.find((p) => p.turn === turn);
  const recall = plants.filter((p) => p.recallTurn === turn);
  let text = traffic.prose(20 + traffic.int(45));
  if (traffic.int(100) < 15) text += traffic.passing();
  if (planted?.mode === 'user') text += ` The one I mean is ${planted.id}.`;
  for (const p of recall) text += ` Any news on ${p.id}?`;
  if (planted?.mode === 'paste') text += ` Here is the log:${traffic.logPaste(20 + traffic.int(30), planted.id)}`;
  else if (traffic.int(1000) < scenario.pasteShare * 1000) text += traffic.int(2) === 0 ? traffic.logPaste(20 + traffic.int(40)) : traffic.codePaste(15 + traffic.int(30));
  session.history.push({ role: 'user', content: text });
  await call();
  const tools = planted?.mode === 'call' || planted?.mode === 'labelled' || traffic.int(1000) < scenario.toolShare * 1000;
  const rounds = tools ? 1 + (scenario.maxCalls > 2 && traffic.int(3) === 0 ? 1 : 0) : 0;
  for (let round = 0; round < rounds; round++) {
    const calls = 1 + traffic.int(scenario.maxCalls);
    const ids = Array.from({ length: calls }, (_, k) => `call_${turn}_${round}_${k}`);
    const results: string[] = [];
    const toolCalls = ids.map((id, k) => {
      const plantHere = round === 0 && k === calls - 1 ? planted : undefined;
      if (!plantHere && k === 0 && traffic.int(10) === 0) {
        const clock = traffic.clockCall(id);
        results.push(clock.result);
        return clock.call;
      }
      const words = Math.floor(traffic.int(1000) / 1000 * (traffic.int(1000) / 1000) * scenario.maxResultWords);
      results.push(capped(traffic.jsonResult(words, plantHere?.mode === 'labelled' ? plantHere.id : undefined, 'invoice'), scenario.window, calls));
      return traffic.lookupCall(id, plantHere?.mode === 'call' ? plantHere.id : undefined);
    });
    session.history.push({ role: 'assistant', content: null, tool_calls: toolCalls }, ...ids.map((id, k) => ({ role: 'tool' as const, tool_call_id: id, content: results[k] })));
    await call();
  }
  let answer = traffic.prose(30 + traffic.int(60));
  if (planted?.mode === 'paste') answer = `The failure in that log is on ${planted.id}. ${answer}`;
  if (tools && traffic.int(3) === 0) answer += ` Item ${10000 + traffic.int(89999)} is back in stock.`;
  session.history.push({ role: 'assistant', content: answer });
}

/** What the worker does to a tool result that would take too much of the window. */
function capped(text: string, window: number, count: number): string {
  const maxChars = toolResultCap(window, count) * 3;
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}…`;
}

export function makeSummarizer(mode: Mode, tally: { in: number; out: number }): Summarizer {
  const random = seededRandom(9);
  return {
    async summarize(r: SummaryRequest) {
      tally.in += countMessageTokens(buildSummaryPrompt(r));
      let out: string;
      if (mode === 'vague') out = 'The user and the assistant discussed several topics.';
      else {
        out = faithfulSummary(r);
        if (mode === 'drops 30%') out = out.split(/(?<=\s)/).filter(() => random() >= 0.3).join('');
      }
      tally.out += countTextTokens(out);
      return out;
    },
  };
}

/** What a good summariser writes: a gist of the user's asks and every reference it was asked to keep or had kept. */
function faithfulSummary(r: SummaryRequest): string {
  const refs = [...new Set([...(r.mustKeep ?? []), ...extractFacts(r.previousSummary ?? '').filter((f) => (r.previousSummary ?? '').includes(`- ${f}`))])];
  const asks = r.turns.filter((m) => m.role === 'user').map((m) => messageText(m).split('\n')[0].slice(0, 160));
  const gist = `## Goal\n${asks.slice(-6).join(' ')}\n## Completed actions\nLooked up ${r.turns.filter((m) => m.role === 'tool').length} records.`;
  const references = `## References (ids, paths, URLs)\n${refs.map((f) => `- ${f}`).join('\n')}`;
  const budgetChars = r.targetTokens * 3;
  return `${references.slice(0, budgetChars)}\n${gist}`.slice(0, budgetChars);
}

function recordPinned(stats: RunStats, pinned: string[]): void {
  stats.pinnedLines.push(pinned.length);
  stats.pinnedTokens.push(pinned.reduce((sum, fact) => sum + countTextTokens(`- ${fact}\n`), 0));
}

/** Tokens of the leading messages two requests share (the part a provider's prompt cache serves). */
function sharedPrefixTokens(previous: readonly ChatMessage[], next: readonly ChatMessage[]): number {
  let k = 0;
  while (k < previous.length && k < next.length && previous[k] === next[k]) k++;
  return k === 0 ? 0 : countMessageTokens(next.slice(0, k));
}

function currentTurn(history: readonly ChatMessage[]): ChatMessage[] {
  let i = history.length - 1;
  while (i > 0 && history[i].role !== 'user') i--;
  return history.slice(i);
}

function presentShare(history: readonly ChatMessage[], plants: readonly Plant[], turn: number): number {
  const text = history.map((m) => `${messageText(m)} ${m.role === 'assistant' ? JSON.stringify(m.tool_calls ?? []) : ''}`).join('\n');
  const due = plants.filter((p) => p.turn <= turn);
  return due.length === 0 ? 1 : due.filter((p) => text.includes(p.id)).length / due.length;
}

function pct(share: number): string {
  return `${(share * 100).toFixed(0)}%`;
}

/** The free perfect compactor: system prompt, one line per planted identifier so far, the current turn; cached like any request. */
class LowerBound {
  private lines = '';
  private turn: ChatMessage[] = [];

  cost(plants: readonly Plant[], turn: ChatMessage[]): number {
    const lines = plants.map((p) => `- ${p.id}`).join('\n');
    const head = countMessageTokens([SYSTEM, { role: 'user', content: lines }]);
    const turnTokens = countMessageTokens(turn) - 3;
    let cached = TOOL_SCHEMA_TOKENS + (lines === this.lines ? head : countMessageTokens([SYSTEM]));
    if (lines === this.lines && turn[0] === this.turn[0]) cached += sharedPrefixTokens(this.turn, turn) - 3;
    this.lines = lines;
    this.turn = turn;
    const total = TOOL_SCHEMA_TOKENS + head + turnTokens;
    return PRICE.cached * cached + PRICE.uncached * (total - cached);
  }
}

