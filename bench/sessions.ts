/**
 * bench/sessions: scripted sessions through a simulated agent loop with the in-loop compressor at
 * 50%, against three fake summarisers (faithful, drops 30%, one vague sentence), compared with no
 * compaction. ~40 identifiers are planted in each session; we count how many reach the final request.
 */
import { ContextCompressor, createCompactionState, countMessageTokens, countTextTokens, type ChatMessage, type Summarizer, type SummaryRequest } from '../src/index.js';
import { messageText } from '../src/core/messages.js';
import { printTable, prose, seededRandom } from './util.js';

const TOOL_SCHEMA_TOKENS = 600;
const PLANTED = 40;

interface Scenario {
  name: string;
  window: number;
  turns: number;
  /** Appends one turn (user message, tool rounds, answer) and returns how many model calls it made. */
  turn: (history: ChatMessage[], i: number, plant: (i: number) => string | null, random: () => number, call: () => Promise<void>) => Promise<void>;
}

type Mode = 'faithful' | 'drops 30%' | 'vague';

const MULTILINGUAL = [
  'Der Kunde fragt, ob das Paket vor Freitag geliefert werden kann, weil das Büro früher schließt.',
  'El cliente pregunta si el paquete puede llegar antes del viernes porque la oficina cierra temprano.',
  'お客様は、事務所が早く閉まるので金曜日までに荷物が届くかどうかを尋ねています。',
  'Клиент спрашивает, можно ли доставить посылку до пятницы, потому что офис закрывается рано.',
  'Le client demande si le colis peut être livré avant vendredi car le bureau ferme tôt.',
];

const SCENARIOS: Scenario[] = [
  {
    name: 'chat 300 turns, pastes (32k)', window: 32_000, turns: 300,
    async turn(history, i, plant, random, call) {
      const paste = random() < 0.06 ? `\n--- pasted log ---\n${prose(2500, random)}` : '';
      history.push({ role: 'user', content: `${prose(25 + Math.floor(random() * 40), random)} ${plant(i) ?? ''}${paste}` });
      await call();
      history.push({ role: 'assistant', content: prose(40 + Math.floor(random() * 80), random) });
    },
  },
  {
    name: 'tools 150 turns, 1–4 calls (48k)', window: 48_000, turns: 150,
    async turn(history, i, plant, random, call) {
      history.push({ role: 'user', content: `Please look into this: ${prose(20, random)}` });
      await call();
      const calls = 1 + Math.floor(random() * 4);
      const ids = Array.from({ length: calls }, (_, k) => `c${i}_${k}`);
      history.push({ role: 'assistant', content: null, tool_calls: ids.map((id) => ({ id, type: 'function' as const, function: { name: 'fetch_record', arguments: `{"id":"${id}"}` } })) });
      for (const id of ids) {
        const words = Math.floor(random() * random() * 4500); // up to ~6k tokens, mostly small
        history.push({ role: 'tool', tool_call_id: id, content: `{"record":"${id}","ref":"${plant(i) ?? ''}","data":"${prose(words, random)}"}` });
      }
      await call();
      history.push({ role: 'assistant', content: `Done. ${prose(30, random)}` });
    },
  },
  {
    name: 'multilingual 200 turns (32k)', window: 32_000, turns: 200,
    async turn(history, i, plant, random, call) {
      const line = MULTILINGUAL[i % MULTILINGUAL.length];
      history.push({ role: 'user', content: `${line} ${line} ${plant(i) ?? ''}` });
      await call();
      history.push({ role: 'assistant', content: `${MULTILINGUAL[(i + 2) % MULTILINGUAL.length]} ${prose(30, random)}` });
    },
  },
];

function plantedIds(seed: number): string[] {
  const random = seededRandom(seed);
  const shapes = [
    (n: number) => `ORD-${n}-XK`, (n: number) => `#${n % 9000 + 1000}`, (n: number) => `INV-2024-${n % 1000}`,
    (n: number) => `${n}${n}`, (n: number) => `/srv/data/${n}.json`, (n: number) => `https://example.com/t/${n}`,
    (n: number) => `user${n}@example.com`, (n: number) => `$${n % 5000},${String(n % 1000).padStart(3, '0')}.00`,
  ];
  return Array.from({ length: PLANTED }, (_, k) => shapes[k % shapes.length](10000 + Math.floor(random() * 89999)));
}

function makeSummarizer(mode: Mode, seed: number, tally: { tokens: number }): Summarizer {
  const random = seededRandom(seed);
  return {
    async summarize(r: SummaryRequest) {
      const input = [r.previousSummary ?? '', ...r.turns.map(messageText)].join('\n');
      tally.tokens += countMessageTokens(r.turns) + countTextTokens(r.previousSummary ?? '');
      let out: string;
      if (mode === 'vague') out = 'The user and the assistant discussed several topics.';
      else {
        const words = input.split(/\s+/).filter(() => mode === 'faithful' || random() >= 0.3);
        out = words.slice(-Math.floor(r.targetTokens * 0.6)).join(' ');
      }
      tally.tokens += countTextTokens(out);
      return out;
    },
  };
}

async function runOne(scenario: Scenario, mode: Mode | 'none') {
  const random = seededRandom(42);
  const ids = plantedIds(7);
  const plantEvery = Math.floor(scenario.turns / PLANTED);
  const plant = (i: number) => (i % plantEvery === 0 && i / plantEvery < PLANTED ? ids[i / plantEvery] : null);
  const tally = { tokens: 0 };
  const compressor = new ContextCompressor({ contextWindow: scenario.window, summarizer: makeSummarizer(mode === 'none' ? 'faithful' : mode, 9, tally), reservedOutputTokens: 1000 });
  let history: ChatMessage[] = [{ role: 'system', content: 'You are a helpful assistant.' }];
  let sent = 0;
  let largest = 0;
  let compactions = 0;
  let last: ChatMessage[] = history;
  let state = createCompactionState();
  const call = async () => {
    let request = countMessageTokens(history) + TOOL_SCHEMA_TOKENS;
    if (mode !== 'none' && compressor.shouldCompress(request, state)) {
      const result = await compressor.compress(history, { requestTokens: request, state });
      state = result.state;
      if (result.outcome !== 'noop' && result.outcome !== 'aborted') compactions++;
      history = result.messages;
      request = result.tokensAfter + TOOL_SCHEMA_TOKENS;
    }
    sent += request;
    largest = Math.max(largest, request);
    last = history;
  };
  for (let i = 0; i < scenario.turns; i++) await scenario.turn(history, i, plant, random, call);
  const finalText = last.map((m) => `${messageText(m)} ${m.role === 'assistant' ? JSON.stringify(m.tool_calls ?? []) : ''}`).join('\n');
  const kept = ids.filter((id) => finalText.includes(id)).length;
  return { sent, summarizer: tally.tokens, per100: (compactions * 100) / scenario.turns, largest: largest / scenario.window, kept: kept / ids.length };
}

/** Runs every scenario in every mode and prints the table. */
export async function runSessionsBench(): Promise<void> {
  console.log('\n## bench/sessions — simulated agent loop, in-loop compressor at 50%, 1,000-token output reserve, 600 tokens of tool schemas\n');
  const rows: Array<Array<string | number>> = [];
  for (const scenario of SCENARIOS) {
    const baseline = await runOne(scenario, 'none');
    rows.push([scenario.name, 'no compaction', baseline.sent, 0, 0, `${(baseline.largest * 100).toFixed(0)}%`, '—', '1.00']);
    for (const mode of ['faithful', 'drops 30%', 'vague'] as const) {
      const r = await runOne(scenario, mode);
      rows.push([scenario.name, mode, r.sent, r.summarizer, r.per100.toFixed(1), `${(r.largest * 100).toFixed(1)}%`, `${(r.kept * 100).toFixed(0)}%`, (r.sent / baseline.sent).toFixed(2)]);
    }
  }
  printTable(['scenario', 'summariser', 'prompt tokens sent', 'summariser tokens', 'compactions/100 turns', 'largest request / window', 'planted ids in final request', 'sent vs none'], rows);
}
