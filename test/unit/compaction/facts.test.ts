import { describe, expect, it } from 'vitest';
import { MessageMemos } from '../../../src/core/compaction/message-memo.js';
import { extractFacts } from '../../../src/index.js';
import { mineMessages } from '../../../src/core/compaction/fact-ledger.js';
import { describeToolResult } from '../../../src/core/compaction/prune.js';

describe('extractFacts', () => {
  it.each([
    ['Order ORD-48213-XK is late', ['ORD-48213-XK']],
    ['invoice INV-2024-001 and ticket #4471', ['#4471', 'INV-2024-001']],
    ['tracking 1Z999AA10123456784 ref 123456', ['1Z999AA10123456784', '123456']],
    ['see /var/log/app/error.log or src/core/facts.ts', ['/var/log/app/error.log', 'src/core/facts.ts']],
    ['open https://shop.example.com/o/48213?x=1.', ['https://shop.example.com/o/48213?x=1']],
    ['mail bob.smith+x@example.co.uk', ['bob.smith+x@example.co.uk']],
    ['total $1,299.00 or 1500 EUR or USD 20', ['$1,299.00', '1500 EUR', 'USD 20']],
    ['due 2024-03-15 at 2024-03-15T10:00:00Z', ['2024-03-15', '2024-03-15T10:00:00Z']],
  ])('finds the strong identifiers in %j', (text, expected) => {
    expect(extractFacts(text).sort()).toEqual([...expected].sort());
  });

  it.each([
    'we waited 200ms and 3rd time it worked',
    'the model gpt-4o with utf8 encoding',
    'pick 1234 or 12,013 items, use /compact please',
    'and/or either way',
  ])('ignores weak tokens in %j', (text) => {
    expect(extractFacts(text)).toEqual([]);
  });
});

describe('mineFacts', () => {
  it('dates later messages newer and skips chatgate notes', () => {
    const note = describeToolResult(`ORD-11111-AA ${'x'.repeat(300)}`, { name: 'get', arguments: '{}' });
    const { facts } = mineMessages([
      { role: 'user', content: 'about ORD-22222-BB' },
      { role: 'tool', tool_call_id: 'a', content: note },
      { role: 'assistant', content: 'and ORD-33333-CC' },
    ], {}, { factClock: 0, turnClock: 0, noteFacts: {} }, { fresh: true, noteTools: { remember: 'remember', forget: 'forget' }, memos: new MessageMemos() });
    expect(Object.keys(facts)).toEqual(['ORD-22222-BB', 'ORD-33333-CC']);
    expect(facts['ORD-33333-CC'][0]).toBeGreaterThan(facts['ORD-22222-BB'][0]);
  });
});
