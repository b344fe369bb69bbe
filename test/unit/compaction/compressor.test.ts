import { describe, expect, it } from 'vitest';
import { APIConnectionError } from 'openai';
import { ContextCompressor, countMessageTokens, sanitizeToolPairs, type ChatMessage } from '../../../src/index.js';
import { alternates } from '../../../src/core/compaction/assemble.js';
import { messageText } from '../../../src/core/messages.js';
import { SUMMARY_PREFIX } from '../../../src/core/compaction/summary-block.js';
import { chatHistory, prose, toolHistory } from '../../helpers/histories.js';
import { chained } from '../../helpers/compaction.js';
import { failingSummarizer, recordingSummarizer, vagueSummarizer } from '../../helpers/summarizers.js';

const WINDOW = 16_000;

function compressor(summarizer = vagueSummarizer(), extra: Partial<ConstructorParameters<typeof ContextCompressor>[0]> = {}) {
  return chained(new ContextCompressor({ contextWindow: WINDOW, summarizer, ...extra }));
}

function summaryBlocks(messages: ChatMessage[]): number {
  return messages.filter((m) => messageText(m).includes(SUMMARY_PREFIX)).length;
}

describe('ContextCompressor basics', () => {
  it('computes the trigger from the window, the reserve and the threshold', () => {
    const c = compressor(vagueSummarizer(), { reservedOutputTokens: 2000, threshold: 0.5 });
    expect(c.thresholdTokens).toBe(7000);
    expect(c.shouldCompress(6999)).toBe(false);
    expect(c.shouldCompress(7000)).toBe(true);
  });

  it('decides without a compaction state, as compress() defaults it (a library user with no state yet)', () => {
    const c = new ContextCompressor({ contextWindow: WINDOW, summarizer: vagueSummarizer(), reservedOutputTokens: 2000, threshold: 0.5 });
    expect(c.shouldCompress(6999)).toBe(false);
    expect(c.shouldCompress(7000)).toBe(true);
    expect(c.shouldCompress(WINDOW)).toBe(true);
  });

  it.each([
    [{ threshold: 1.5 }, '`threshold` must be in (0, 1] (got 1.5)'],
    [{ contextWindow: -1 }, '`contextWindow` must be a positive integer (got -1)'],
    [{ protectLastN: 0 }, '`protectLastN` must be a whole number ≥ 1 (got 0)'],
  ])('rejects bad options %o with a message naming the option', (bad, message) => {
    expect(() => compressor(vagueSummarizer(), bad)).toThrow(message);
  });

  it('returns noop below the trigger, with equal messages and no summariser call', async () => {
    const summarizer = vagueSummarizer();
    const history = chatHistory(3);
    const result = await compressor(summarizer).compress(history);
    expect(result.outcome).toBe('noop');
    expect(result.messages).toEqual(history);
    expect(summarizer.requests).toHaveLength(0);
  });

  it('returns noop when forced but nothing lies between head and tail', async () => {
    const history = chatHistory(2);
    const result = await compressor().compress(history, { force: true });
    expect(result.outcome).toBe('noop');
    expect(result.messages).toEqual(history);
  });

  it('does not mutate its input and is deterministic', async () => {
    const history = toolHistory(60);
    const copy = structuredClone(history);
    const a = await compressor().compress(history, { force: true });
    const b = await compressor().compress(history, { force: true });
    expect(history).toEqual(copy);
    expect(a.messages).toEqual(b.messages);
    expect(a.state).toEqual(b.state);
  });
});

describe('ContextCompressor pruning', () => {
  it('prunes old tool results to one-line notes with their identifiers and keeps the current round', async () => {
    const summarizer = vagueSummarizer();
    const history = toolHistory(30, 300);
    history[15] = { role: 'tool', tool_call_id: 'call_3', content: `Order ORD-48213-XK shipped. ${prose(300)}` };
    history.push({ role: 'user', content: 'And order 99?' });
    history.push({ role: 'assistant', content: null, tool_calls: [{ id: 'now', type: 'function', function: { name: 'get_order', arguments: '{"order":99}' } }] });
    const current = `Current round result ${prose(400)}`;
    history.push({ role: 'tool', tool_call_id: 'now', content: current });
    const result = await compressor(summarizer).compress(history);
    expect(result.outcome).toBe('pruned');
    expect(summarizer.requests).toHaveLength(0);
    expect(result.tokensAfter).toBeLessThan(result.tokensBefore);
    const note = result.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'call_3');
    expect(note?.content).toMatch(/^\[chatgate:pruned\] \[get_order order=3\] → [\d,]+ chars; ids: ORD-48213-XK/);
    expect(result.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'now', content: current });
  });

  it('turns an older tool result identical to a newer one into a duplicate note', async () => {
    const history = toolHistory(30, 300);
    const same = `{"status":"same"} ${prose(300)}`;
    history[15] = { role: 'tool', tool_call_id: 'call_3', content: same };
    history[history.length - 2] = { role: 'tool', tool_call_id: 'call_29', content: same };
    const result = await compressor().compress(history);
    const first = result.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'call_3');
    expect(first?.content).toMatch(/^\[chatgate:duplicate\]/);
  });

  it('shortens over-long tool-call arguments without breaking their JSON', async () => {
    const history = toolHistory(30, 300);
    const long = JSON.stringify({ query: 'x'.repeat(5000), limit: 3 });
    history[14] = { role: 'assistant', content: null, tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'search', arguments: long } }] };
    const result = await compressor().compress(history);
    const call = result.messages.find((m) => m.role === 'assistant' && m.tool_calls?.[0]?.id === 'call_3');
    const args = call?.role === 'assistant' ? call.tool_calls?.[0].function.arguments ?? '' : '';
    expect(args.length).toBeLessThan(long.length);
    expect(JSON.parse(args)).toMatchObject({ limit: 3 });
  });
});

describe('ContextCompressor tool pairs and order', () => {
  it('keeps parallel tool calls with all their results and leaves no orphans', async () => {
    const history: ChatMessage[] = [{ role: 'system', content: 'sys' }];
    for (let i = 0; i < 40; i++) {
      history.push({ role: 'user', content: `ask ${i} ${prose(40)}` });
      history.push({
        role: 'assistant', content: null,
        tool_calls: [0, 1, 2].map((k) => ({ id: `c${i}_${k}`, type: 'function' as const, function: { name: 'f', arguments: '{}' } })),
      });
      for (const k of [0, 1, 2]) history.push({ role: 'tool', tool_call_id: `c${i}_${k}`, content: `r${k} ${prose(120)}` });
      history.push({ role: 'assistant', content: `done ${i}` });
    }
    const result = await compressor().compress(history, { force: true });
    expect(result.outcome).toBe('compacted');
    expect(sanitizeToolPairs(result.messages)).toEqual(result.messages);
    expect(alternates(result.messages)).toBe(true);
  });

  it('keeps the latest user message verbatim and last, the reply to it and the latest assistant text', async () => {
    const history = chatHistory(80);
    history.push({ role: 'user', content: 'FINAL QUESTION about #4471' });
    const result = await compressor().compress(history, { force: true });
    const users = result.messages.filter((m) => m.role === 'user' && !messageText(m).startsWith('[chatgate'));
    expect(users.at(-1)).toEqual(history.at(-1));
    expect(result.messages).toContainEqual(history.at(-2));
    expect(alternates(result.messages)).toBe(true);
  });

  it('keeps exactly one summary block over many compactions and passes the previous summary on', async () => {
    let n = 0;
    const summarizer = recordingSummarizer(() => `Summary number ${++n}.`);
    const c = compressor(summarizer);
    let history = chatHistory(40);
    for (let round = 0; round < 5; round++) {
      const result = await c.compress(history, { force: true, focus: 'the refund' });
      expect(summaryBlocks(result.messages)).toBe(1);
      history = [...result.messages, ...chatHistory(20).slice(1)];
    }
    expect(summarizer.requests[0].previousSummary).toBeNull();
    for (let i = 1; i < summarizer.requests.length; i++) {
      expect(summarizer.requests[i].previousSummary).toBe(`Summary number ${i}.`);
      expect(summarizer.requests[i].turns.some((m) => messageText(m).includes(SUMMARY_PREFIX))).toBe(false);
    }
    expect(summarizer.requests.every((r) => r.focus === 'the refund')).toBe(true);
  });

  it('asks for max(2000, min(0.20 × middle, min(0.05 × window, 12000))) tokens', async () => {
    const summarizer = vagueSummarizer();
    const big = chained({ contextWindow: 1_000_000, summarizer });
    const history = chatHistory(400, 200);
    await big.compress(history, { force: true });
    const request = summarizer.requests[0];
    const middle = countMessageTokens(request.turns);
    expect(request.targetTokens).toBe(Math.floor(Math.max(2000, Math.min(0.2 * middle, Math.min(50_000, 12_000)))));
    expect(request.targetTokens).toBeGreaterThan(2000);
  });
});

describe('ContextCompressor summariser failures', () => {
  it.each([
    ['throws a 500', () => failingSummarizer(Object.assign(new Error('upstream 500'), { status: 500 }))],
    ['answers empty', () => recordingSummarizer(() => '   ')],
  ])('falls back to a deterministic summary when the summariser %s', async (_name, make) => {
    const history = chatHistory(60);
    history.push({ role: 'user', content: 'latest ask' });
    const result = await compressor(make()).compress(history, { force: true });
    expect(result.outcome).toBe('fallback');
    expect(result.summary).toContain('What the user asked');
    expect(result.summary).toContain('Turn 5');
    expect(summaryBlocks(result.messages)).toBe(1);
  });

  it.each([
    ['401', Object.assign(new Error('unauthorised'), { status: 401 })],
    ['403', Object.assign(new Error('forbidden'), { status: 403 })],
    ['ECONNREFUSED', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })],
    ['ECONNRESET (as cause)', new Error('fetch failed', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) })],
    ['openai connection error', new APIConnectionError({ message: 'Connection error.' })],
  ])('aborts on %s and leaves the messages unchanged', async (_name, error) => {
    const history = chatHistory(60);
    const result = await compressor(failingSummarizer(error)).compress(history, { force: true });
    expect(result.outcome).toBe('aborted');
    expect(result.messages).toEqual(history);
  });

  it('falls back instead of aborting when the request does not fit the window', async () => {
    const history = chatHistory(200, 60);
    const result = await compressor(failingSummarizer(Object.assign(new Error('x'), { status: 401 }))).compress(history);
    expect(countMessageTokens(history)).toBeGreaterThan(WINDOW);
    expect(result.outcome).toBe('fallback');
    expect(result.tokensAfter).toBeLessThanOrEqual(WINDOW);
  });

  it('cools down after a failure; force bypasses the cool-down', async () => {
    let now = 1_000;
    const summarizer = failingSummarizer(Object.assign(new Error('boom'), { status: 502 }));
    const c = compressor(summarizer, { now: () => now, summarizerCooldownMs: 60_000 });
    await c.compress(chatHistory(60), { force: true });
    expect(summarizer.requests).toHaveLength(1);
    const during = await c.compress(chatHistory(60, 90));
    expect(during.outcome).toBe('fallback');
    expect(during.reason).toMatch(/cooling down/);
    expect(summarizer.requests).toHaveLength(1);
    await c.compress(chatHistory(60), { force: true });
    expect(summarizer.requests).toHaveLength(2);
    now += 10 * 60_000;
    await c.compress(chatHistory(60, 90));
    expect(summarizer.requests).toHaveLength(3);
  });
});

describe('ContextCompressor summariser usage', () => {
  it('passes on the usage a summariser reports with its text', async () => {
    const summarizer = recordingSummarizer(() => ({ text: 'A summary.', usage: { promptTokens: 1234, completionTokens: 56 } }));
    const result = await compressor(summarizer).compress(chatHistory(60), { force: true });
    expect(result.outcome).toBe('compacted');
    expect(result.summarizerUsage).toEqual({ promptTokens: 1234, completionTokens: 56 });
    expect(result.summary).toContain('A summary.');
  });
});

describe('ContextCompressor cool-down after an aborting error', () => {
  it('keeps aborting (messages unchanged) while cooling down after an unreachable summariser', async () => {
    let now = 1_000;
    const summarizer = failingSummarizer(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    const c = compressor(summarizer, { now: () => now });
    const history = chatHistory(60, 90);
    expect((await c.compress(history)).outcome).toBe('aborted');
    const during = await c.compress(history);
    expect(during.outcome).toBe('aborted');
    expect(during.messages).toEqual(history);
    expect(summarizer.requests).toHaveLength(1);
    now += 10 * 60_000;
    await c.compress(history);
    expect(summarizer.requests).toHaveLength(2);
  });
});
