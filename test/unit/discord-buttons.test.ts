import { describe, expect, it } from 'vitest';
import { toDiscordButtons } from '../../channels/discord/send.js';
import { approvalChoices } from '../../src/core/approval.js';

describe('toDiscordButtons', () => {
  it('makes one action row: the first green, a /deny red, the rest grey, each carrying its command', () => {
    expect(toDiscordButtons(approvalChoices('k3x9ab'))).toEqual([{ type: 1, components: [
      { type: 2, style: 3, label: 'Approve', custom_id: '/approve k3x9ab' },
      { type: 2, style: 2, label: 'Always in this chat', custom_id: '/approve k3x9ab always' },
      { type: 2, style: 4, label: 'Deny', custom_id: '/deny k3x9ab' },
    ] }]);
  });

  it.each([
    ['a command over 100 characters has no button', [{ label: 'Long', command: `/x ${'y'.repeat(98)}` }, { label: 'Ok', command: '/ok' }], ['/ok']],
    ['at most 5 buttons', ['/1', '/2', '/3', '/4', '/5', '/6'].map((command) => ({ label: command, command })), ['/1', '/2', '/3', '/4', '/5']],
    ['no buttons at all: no row', [{ label: 'Long', command: `/${'z'.repeat(100)}` }], undefined],
  ])('%s', (_name, choices, customIds) => {
    const rows = toDiscordButtons(choices) as Array<{ components: Array<{ custom_id: string; label: string }> }>;
    expect(rows[0]?.components.map((button) => button.custom_id)).toEqual(customIds);
  });

  it('cuts a label to Discord\'s 80 characters on a code point boundary', () => {
    const [row] = toDiscordButtons([{ label: '😀'.repeat(100), command: '/go' }]) as Array<{ components: Array<{ label: string }> }>;
    expect([...row!.components[0]!.label]).toHaveLength(80);
  });
});
