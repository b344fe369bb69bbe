import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ContextCompressor, countMessageTokens, sanitizeToolPairs, type ChatMessage, type Summarizer } from '../../../src/index.js';
import { alternates } from '../../../src/core/compaction/assemble.js';
import { lastUserIndex } from '../../../src/core/messages.js';

const RUNS = 1000;
const WINDOW = 6_000;
const WORDS = ['alpha', 'order', 'ORD-12345-AB', 'refund', '#8812', 'ship', 'path /a/b/c.txt', 'ok', 'hello', 'world'];

const text = (maxWords: number) => fc.array(fc.constantFrom(...WORDS), { maxLength: maxWords }).map((w) => w.join(' '));
const huge = fc.integer({ min: 2_000, max: 12_000 }).map((n) => 'data '.repeat(Math.floor(n / 5)));

/** One turn: a user message, then an answer that may call tools (in parallel), with odd shapes mixed in. */
const turn = fc.record({
  user: text(40),
  calls: fc.integer({ min: 0, max: 3 }),
  results: fc.array(fc.oneof({ weight: 4, arbitrary: text(80) }, { weight: 1, arbitrary: huge }), { minLength: 3, maxLength: 3 }),
  answer: fc.option(text(40), { nil: null }),
  oddity: fc.constantFrom('none', 'none', 'none', 'double-user', 'system-mid', 'assistant-only'),
});

type Turn = typeof turn extends fc.Arbitrary<infer T> ? T : never;

function build(turns: Turn[], withSystem: boolean): ChatMessage[] {
  const messages: ChatMessage[] = withSystem ? [{ role: 'system', content: 'You are terse.' }] : [];
  turns.forEach((t, i) => {
    if (t.oddity === 'assistant-only') {
      messages.push({ role: 'assistant', content: t.answer });
      return;
    }
    if (t.oddity === 'system-mid') messages.push({ role: 'system', content: 'Reminder: be terse.' });
    messages.push({ role: 'user', content: t.user });
    if (t.oddity === 'double-user') messages.push({ role: 'user', content: `${t.user} (again)` });
    if (t.calls > 0) {
      const ids = Array.from({ length: t.calls }, (_, k) => `t${i}_${k}`);
      messages.push({ role: 'assistant', content: null, tool_calls: ids.map((id) => ({ id, type: 'function' as const, function: { name: 'lookup', arguments: '{"q":1}' } })) });
      ids.forEach((id, k) => messages.push({ role: 'tool', tool_call_id: id, content: t.results[k] }));
    }
    messages.push({ role: 'assistant', content: t.answer ?? 'done' });
  });
  return messages;
}

const history = fc.tuple(fc.array(turn, { minLength: 1, maxLength: 30 }), fc.boolean()).map(([turns, sys]) => build(turns, sys));
const options = fc.record({ force: fc.boolean(), overhead: fc.integer({ min: 0, max: 800 }) });

const summarizer: Summarizer = { summarize: async (r) => `Summary of ${r.turns.length} turns. ${'detail '.repeat(r.turns.length * 5)}` };

async function run(messages: ChatMessage[], o: { force: boolean; overhead: number }) {
  const c = new ContextCompressor({ contextWindow: WINDOW, summarizer, reservedOutputTokens: 500 });
  const before = countMessageTokens(messages);
  const result = await c.compress(messages, { force: o.force, requestTokens: before + o.overhead });
  return { c, result, before };
}

function noOrphans(messages: ChatMessage[]): boolean {
  return JSON.stringify(sanitizeToolPairs(messages)) === JSON.stringify(messages);
}

describe('ContextCompressor properties', () => {
  it('never leaves an orphan tool call or result', async () => {
    await fc.assert(fc.asyncProperty(history, options, async (messages, o) => {
      const { result } = await run(messages, o);
      const inputClean = noOrphans(messages);
      expect(!inputClean || noOrphans(result.messages)).toBe(true);
    }), { numRuns: RUNS });
  });

  it('keeps alternation where the input alternated', async () => {
    await fc.assert(fc.asyncProperty(history, options, async (messages, o) => {
      const { result } = await run(messages, o);
      if (alternates(messages)) expect(alternates(result.messages)).toBe(true);
    }), { numRuns: RUNS });
  });

  it('keeps the latest user message verbatim and last among user messages', async () => {
    await fc.assert(fc.asyncProperty(history, options, async (messages, o) => {
      const { result } = await run(messages, o);
      const i = lastUserIndex(messages);
      if (i < 0) return;
      const j = lastUserIndex(result.messages);
      expect(result.messages[j]).toEqual(messages[i]);
      expect(result.messages.slice(j)).toEqual(messages.slice(i));
    }), { numRuns: RUNS });
  });

  it('never grows the history and never exceeds the window, overhead included', async () => {
    await fc.assert(fc.asyncProperty(history, options, async (messages, o) => {
      const { c, result } = await run(messages, o);
      expect(result.tokensAfter).toBeLessThanOrEqual(result.tokensBefore);
      expect(result.tokensAfter).toBe(countMessageTokens(result.messages));
      const i = lastUserIndex(messages);
      // The promise holds unless the system prompt and the latest exchange alone are too large.
      const protectedTokens = countMessageTokens(messages.filter((m, k) => (k === 0 && m.role === 'system') || (i >= 0 && k >= i)));
      if (protectedTokens + o.overhead <= c.limitTokens) expect(result.tokensAfter + o.overhead).toBeLessThanOrEqual(c.limitTokens);
    }), { numRuns: RUNS });
  });

  it('does not mutate its input', async () => {
    await fc.assert(fc.asyncProperty(history, options, async (messages, o) => {
      const copy = structuredClone(messages);
      await run(messages, o);
      expect(messages).toEqual(copy);
    }), { numRuns: RUNS });
  });
});
