import { describe, expect, it } from 'vitest';
import { COMMAND_MENU, HELP_TEXT, parseCommand, START_TEXT } from '../../src/core/commands.js';
import { automaticCompactionNotice, describeCompaction } from '../../src/core/compaction/compaction-text.js';
import { lastExchange } from '../../src/core/last-exchange.js';
import type { ChatMessage } from '../../src/core/messages.js';
import { countOf } from '../../src/core/plural.js';

describe('parseCommand', () => {
  it.each([
    ['/start', 'start', ''],
    ['/new', 'reset', ''],
    ['/NEW', 'reset', ''],
    ['/compress the refund', 'compact', 'the refund'],
    ['/stop', 'stop', ''],
    ['/retry', 'retry', ''],
    ['/start@chatgate_bot deep-link', 'start', 'deep-link'],
  ])('%s → %s', (text, name, args) => {
    expect(parseCommand(text, 'chatgate_bot')).toEqual({ name, args });
  });

  it.each(['/stopp', '/new@other_bot', 'stop', 'please /stop', '/'])('%s is not a command', (text) => {
    expect(parseCommand(text, 'chatgate_bot')).toBeNull();
  });
});

describe('command texts', () => {
  it('/help and /start list every command of the menu, aliases included', () => {
    for (const entry of COMMAND_MENU) {
      expect(HELP_TEXT).toContain(`/${entry.command}`);
      expect(START_TEXT).toContain(`/${entry.command}`);
    }
    expect(HELP_TEXT).toContain('/compress');
    expect(HELP_TEXT).toContain('/reset');
    expect(START_TEXT.split('\n')[0]).toMatch(/^Hello!/);
  });

  it('the menu obeys Telegram\'s setMyCommands rules', () => {
    for (const entry of COMMAND_MENU) {
      expect(entry.command).toMatch(/^[a-z0-9_]{1,32}$/);
      expect(entry.description.length).toBeGreaterThan(0);
      expect(entry.description.length).toBeLessThanOrEqual(256);
    }
  });
});

describe('countOf', () => {
  it.each([
    [0, 'message', '0 messages'], [1, 'message', '1 message'], [2, 'message', '2 messages'],
    [4277, 'token', '4,277 tokens'], [1, 'model call', '1 model call'], [3, 'reply', '3 replies'],
  ])('%d %s → %s', (n, noun, text) => expect(countOf(n, noun)).toBe(text));
});

describe('describeCompaction', () => {
  const figures = { requestTokensBefore: 4277, requestTokensAfter: 3094 };
  it.each([
    ['compacted', /^Compacted: 4,277 → 3,094 tokens\. The earlier conversation is now a summary/],
    ['pruned', /^Compacted: 4,277 → 3,094 tokens\. Old tool output was shortened/],
    ['fallback', /^Compacted: 4,277 → 3,094 tokens\. The summariser was unavailable/],
    ['aborted', /^Nothing was compacted: the summariser could not be reached/],
    ['noop', /^Nothing to compact yet — the conversation is still short\.$/],
  ] as const)('%s has a plain sentence', (outcome, text) => {
    const answer = describeCompaction({ outcome, ...figures });
    expect(answer).toMatch(text);
    expect(answer).not.toMatch(/noop|head and tail|Compaction /);
  });

  it('names the focus and says when automatic compaction paused', () => {
    const answer = describeCompaction({ outcome: 'compacted', ...figures, focus: 'the refund', pausedNow: true });
    expect(answer).toMatch(/^Compacted \(focus: the refund\): 4,277 → 3,094 tokens\./);
    expect(answer).toContain('Automatic compaction is paused');
  });

  it('an automatic compaction has one line, and none when nothing changed', () => {
    expect(automaticCompactionNotice({ outcome: 'compacted', requestTokensBefore: 12_400, requestTokensAfter: 3100 })).toBe('Compacted the earlier conversation to keep it within the model\'s window (12,400 → 3,100 tokens).');
    expect(automaticCompactionNotice({ outcome: 'pruned', requestTokensBefore: 2, requestTokensAfter: 1 })).toContain('(2 → 1 token)');
    expect(automaticCompactionNotice({ outcome: 'noop', ...figures })).toBeNull();
    expect(automaticCompactionNotice({ outcome: 'aborted', ...figures })).toBeNull();
  });
});

describe('lastExchange', () => {
  const user = (content: string): ChatMessage => ({ role: 'user', content });
  const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });
  const call: ChatMessage = { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'now', arguments: '{}' } }] };
  const result: ChatMessage = { role: 'tool', tool_call_id: 'c1', content: '12:00' };

  it.each([
    ['no messages', [], null],
    ['only answers', [assistant('hi')], null],
    ['one exchange', [user('a'), assistant('A')], { start: 0, userTexts: ['a'], holdsSummary: false }],
    ['a tool round', [user('a'), assistant('A'), user('b'), call, result, assistant('B')], { start: 2, userTexts: ['b'], holdsSummary: false }],
    ['two messages one turn took', [user('a'), assistant('A'), user('b'), user('c'), assistant('BC')], { start: 2, userTexts: ['b', 'c'], holdsSummary: false }],
    ['an unanswered message', [user('a'), assistant('A'), user('b')], { start: 2, userTexts: ['b'], holdsSummary: false }],
  ] as const)('%s', (_name, messages, expected) => {
    expect(lastExchange(messages as readonly ChatMessage[])).toEqual(expected);
  });

  it('marks an exchange that holds the summary message', () => {
    expect(lastExchange([user('summary + a'), assistant('A')], 0)?.holdsSummary).toBe(true);
    expect(lastExchange([user('summary'), assistant('ok'), user('b'), assistant('B')], 0)?.holdsSummary).toBe(false);
  });
});
