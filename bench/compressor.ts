/**
 * bench/compressor: the cost of one compress() against one plain gpt-tokenizer pass over the same
 * history, for chat and tool-heavy histories of 100, 1,000 and 10,000 messages (instant summariser).
 */
import { ContextCompressor, countTextTokens, type ChatMessage } from '../src/index.js';
import { messageText } from '../src/core/messages.js';
import { percentile, printTable, prose, seededRandom } from './util.js';

const SIZES = [100, 1_000, 10_000];
const SAMPLES: Record<number, number> = { 100: 60, 1_000: 20, 10_000: 6 };

function history(size: number, kind: 'chat' | 'tool'): ChatMessage[] {
  const random = seededRandom(size + (kind === 'tool' ? 1 : 0));
  const messages: ChatMessage[] = [{ role: 'system', content: 'You are a helpful assistant.' }];
  let i = 0;
  while (messages.length < size) {
    messages.push({ role: 'user', content: `Please check order ORD-${10000 + i}-AB. ${prose(30, random)}` });
    if (kind === 'tool') {
      const id = `call_${i}`;
      messages.push({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'get_order', arguments: `{"order":${10000 + i}}` } }] });
      messages.push({ role: 'tool', tool_call_id: id, content: `{"order":"ORD-${10000 + i}-AB","log":"${prose(300, random)}"}` });
    }
    messages.push({ role: 'assistant', content: `Order ${i} is fine. ${prose(40, random)}` });
    i++;
  }
  return messages.slice(0, size);
}

/** Fresh message objects, so no per-message cache from an earlier sample helps. */
function fresh(messages: ChatMessage[]): ChatMessage[] {
  return structuredClone(messages);
}

async function timeCompress(messages: ChatMessage[]): Promise<number> {
  const compressor = new ContextCompressor({ contextWindow: 128_000, summarizer: { summarize: async () => 'Summary.' } });
  const input = fresh(messages);
  const start = cpuMs();
  await compressor.compress(input, { force: true });
  return cpuMs() - start;
}

function timeTokenizerPass(messages: ChatMessage[]): number {
  const input = fresh(messages);
  const start = cpuMs();
  let total = 0;
  for (const m of input) {
    total += countTextTokens(messageText(m));
    if (m.role === 'assistant' && m.tool_calls) for (const c of m.tool_calls) total += countTextTokens(c.function.arguments);
  }
  if (total < 0) throw new Error('unreachable');
  return cpuMs() - start;
}

/** This process's CPU time (user + system) in ms: steadier than wall time on a machine doing other work. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Runs the benchmark and prints one row per size and kind. */
export async function runCompressorBench(): Promise<void> {
  console.log('\n## bench/compressor — compress() vs one plain gpt-tokenizer pass (o200k_base), cold caches, CPU time of this process\n');
  const rows: Array<Array<string | number>> = [];
  for (const kind of ['chat', 'tool'] as const) {
    for (const size of SIZES) {
      const messages = history(size, kind);
      await timeCompress(messages); // warm the JIT and the tokenizer's tables
      const compress: number[] = [];
      const plain: number[] = [];
      for (let s = 0; s < SAMPLES[size]; s++) {
        plain.push(timeTokenizerPass(messages));
        compress.push(await timeCompress(messages));
      }
      const p50 = percentile(compress, 50);
      const plain50 = percentile(plain, 50);
      rows.push([kind, size, p50.toFixed(2), percentile(compress, 99).toFixed(2), plain50.toFixed(2), (p50 / plain50).toFixed(2), (p50 / size * 1000).toFixed(1)]);
    }
  }
  printTable(['history', 'messages', 'compress p50 ms', 'compress p99 ms', 'tokenizer pass ms', 'ratio p50', 'µs/message'], rows);
}
