import { describe, expect, it } from 'vitest';
import { MessageMemos } from '../../../src/core/compaction/message-memo.js';
import { toCompactionState, type ChatMessage } from '../../../src/index.js';
import { bySalience, mineMessages, salienceOf } from '../../../src/core/compaction/fact-ledger.js';
import { scanFacts } from '../../../src/core/compaction/facts.js';
import { chained } from '../../helpers/compaction.js';
import { chatHistory, prose } from '../../helpers/histories.js';
import { vagueSummarizer } from '../../helpers/summarizers.js';
import { FactOrigin } from '../../../src/core/compaction/compaction-types.js';
import { selectPinned } from '../../../src/core/compaction/compaction-inputs.js';
import { TokenCounter } from '../../../src/core/tokens.js';

const TOKENS = new TokenCounter();
const lineTokens = (fact: string) => TOKENS.countText(`- ${fact}\n`);

const NOTES = { remember: 'remember', forget: 'forget' };
const CLOCK = { factClock: 0, turnClock: 0, noteFacts: {} };

function mine(messages: ChatMessage[]) {
  return mineMessages(messages, {}, CLOCK, { fresh: true, noteTools: NOTES, memos: new MessageMemos() }).facts;
}

function logLines(n: number): string {
  return Array.from({ length: n }, (_, i) => `2026-12-01T08:${String(i % 60).padStart(2, '0')}:41.${100 + i}Z INFO req=7f3a9c${String(i).padStart(4, '0')}e1 dur=${i}ms`).join('\n');
}

describe('fact shapes and contexts', () => {
  it.each([
    ['2026-12-01T08:04:41.492Z', 0],
    ['parse_42', 0],
    ['camelCase22', 0],
    ['7f3a9c2e1b44', 0],
    ['ORD-48213-XK', 2],
    ['2025-03-14', 2],
    ['5550123456', 2],
    ['48213', 1],
  ])('reads %j as shape %i', (fact, shape) => {
    expect(scanFacts(`see ${fact} here`, 'words').find((f) => f.fact === fact)?.shape).toBe(shape);
  });

  it('reads a version next to a dot as weak', () => {
    expect(scanFacts('upgraded node-18.20.1 today', 'words').find((f) => f.fact === 'node-18')?.shape).toBe(0);
  });

  it('tells labelled values of a tool result from bare tokens of a log line', () => {
    const found = scanFacts(`{"invoice":"INV-2024-001","total":"$1,299.00"}\n2026-12-01T08:04:41Z INFO order ORD-55555-ZZ ok`, 'tool');
    expect(found.find((f) => f.fact === 'INV-2024-001')?.context).toBe('labelled');
    expect(found.find((f) => f.fact === 'ORD-55555-ZZ')?.context).toBe('bare');
  });

  it('reads a code block in a user message as a paste, not as the user’s words', () => {
    const found = scanFacts('my order is ORD-11111-AA\n```\nconst ORD_22222_BB = 1;\n```', 'words');
    expect(found.find((f) => f.fact === 'ORD-11111-AA')?.context).toBe('prose');
    expect(found.find((f) => f.fact === 'ORD_22222_BB')?.context).toBe('bare');
  });
});

describe('salience', () => {
  it('ranks an id the user typed above a hundred timestamps a tool printed', () => {
    const facts = mine([
      { role: 'user', content: 'Where is ORD-48213-XK?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'logs', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: logLines(100) },
    ]);
    const order = Object.keys(facts).sort(bySalience(facts));
    expect(Object.keys(facts).length).toBeGreaterThan(100);
    expect(order[0]).toBe('ORD-48213-XK');
  });

  it('ranks a tool-call argument above a bare token of the result that answered it', () => {
    const facts = mine([
      { role: 'user', content: 'check the last refund' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_refund', arguments: '{"refund":"RF-2024-7781"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: `refund RF-2024-7781 processed by batch BT-9921-QQ\n${prose(40)}` },
    ]);
    expect(facts['RF-2024-7781'][2]).toBe(FactOrigin.call);
    expect(salienceOf(facts['RF-2024-7781'])).toBeGreaterThan(salienceOf(facts['BT-9921-QQ']));
  });

  it('raises a fact each later turn uses it again', () => {
    const once = mine([{ role: 'tool', tool_call_id: 'x', content: 'order ORD-77777-AB' }]);
    const used = mine([
      { role: 'tool', tool_call_id: 'x', content: 'order ORD-77777-AB' },
      { role: 'user', content: 'what about ORD-77777-AB?' },
      { role: 'assistant', content: 'ORD-77777-AB ships Monday' },
      { role: 'user', content: 'and ORD-77777-AB again' },
    ]);
    expect(used['ORD-77777-AB'][3]).toBe(2);
    expect(salienceOf(used['ORD-77777-AB'])).toBeGreaterThan(salienceOf(once['ORD-77777-AB']));
  });

  it('always pins a remember note, even behind noise that fills the section, until forget releases it', async () => {
    const history: ChatMessage[] = chatHistory(4);
    history.push({ role: 'user', content: 'remember my locker code' });
    history.push({ role: 'assistant', content: null, tool_calls: [{ id: 'n1', type: 'function', function: { name: 'remember', arguments: '{"key":"locker","note":"locker LK-4471-ZZ"}' } }] });
    history.push({ role: 'tool', tool_call_id: 'n1', content: 'remembered "locker"' });
    history.push({ role: 'assistant', content: 'Saved.' });
    for (let i = 0; i < 60; i++) {
      history.push({ role: 'user', content: `ticket TCK-${10_000 + i}-AA needs a look ${prose(40)}` });
      history.push({ role: 'assistant', content: `Looking at TCK-${10_000 + i}-AA. ${prose(40)}` });
    }
    const session = chained({ contextWindow: 8_000, summarizer: vagueSummarizer(), pinnedShare: 0.02 });
    const result = await session.compress(history, { force: true });
    expect(result.pinnedFacts).toContain('LK-4471-ZZ');
    expect(result.state.pinsOmitted).toBeGreaterThan(0);
    const forgot: ChatMessage[] = [...result.messages,
      { role: 'user', content: 'forget the locker' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'n2', type: 'function', function: { name: 'forget', arguments: '{"key":"locker"}' } }] },
      { role: 'tool', tool_call_id: 'n2', content: 'forgot "locker"' },
      ...chatHistory(30).slice(1)];
    const after = await session.compress(forgot, { force: true });
    expect(after.state.facts['LK-4471-ZZ'][2]).not.toBe(FactOrigin.note);
  });

  it('refuses a stored state of another format version, naming what it found and what to do', () => {
    for (const [stored, found] of [[{ version: 1, compactions: 2, facts: { 'ORD-48213-XK': 7 } }, '1'], [{ compactions: 2 }, 'none'], [{ version: 3 }, '3'], ['{}', 'none \\(a string\\)']] as const) {
      expect(() => toCompactionState(stored)).toThrow(new RegExp(`^compaction state has format version ${found}; this chatgate reads version 2: run the chatgate version that wrote it$`));
    }
  });

  it('reads a stored version 2 state, filling fields it lacks with fresh values', () => {
    const state = toCompactionState({ version: 2, compactions: 2, facts: { 'ORD-48213-XK': [7, 0, FactOrigin.labelled, 0, 2] } });
    expect(state).toMatchObject({ version: 2, compactions: 2, facts: { 'ORD-48213-XK': [7, 0, FactOrigin.labelled, 0, 2] }, summary: null, paused: false });
    expect(toCompactionState(null)).toEqual(toCompactionState(undefined));
  });
});

describe('the pinned section fills its room by salience', () => {
  /** A record: last seen at `seen`, origin, uses, shape. */
  const record = (seen: number, origin: FactOrigin, shape: 0 | 1 | 2): [number, number, FactOrigin, number, 0 | 1 | 2] => [seen, 0, origin, 0, shape];

  it('pins every noise-like fact that fits when there is room (an invoice id seen once among a dozen labelled numbers), never a weak shape', () => {
    const ledger: Record<string, ReturnType<typeof record>> = { 'INV-2024-00417': record(1, FactOrigin.bare, 2) };
    for (let i = 0; i < 12; i++) ledger[String(48_000 + i)] = record(10 + i, FactOrigin.labelled, 1);
    ledger['2026-12-01T08:04:41.492Z'] = record(50, FactOrigin.bare, 0);
    ledger['parse_42'] = record(51, FactOrigin.call, 0);
    const { pinned, omitted } = selectPinned(ledger, () => false, 2_000, lineTokens);
    expect(pinned).toContain('INV-2024-00417');
    expect(pinned).toHaveLength(13);
    expect(pinned).not.toContain('2026-12-01T08:04:41.492Z');
    expect(pinned).not.toContain('parse_42');
    expect(omitted).toBe(2);
  });

  it('keeps a noisy session\'s section small: when the noise-like facts past the allowance do not all fit, only the allowance is pinned', () => {
    const ledger: Record<string, ReturnType<typeof record>> = {};
    for (let i = 0; i < 400; i++) ledger[String(70_000 + i)] = record(i, FactOrigin.labelled, 1);
    const { pinned } = selectPinned(ledger, () => false, 2_000, lineTokens);
    // The most recently seen first.
    expect(pinned).toEqual(['70399', '70398', '70397', '70396', '70395', '70394', '70393', '70392']);
    expect(pinned.reduce((sum, fact) => sum + TOKENS.countText(`- ${fact}\n`), 0)).toBeLessThanOrEqual(2_000);
  });
});
