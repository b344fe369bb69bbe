import { describe, expect, it } from 'vitest';
import { effectiveBusyMode, parseBusyModeOption, parseChatSettings } from '../../src/core/busy-mode.js';

const CHANNELS = ['telegram', 'discord', 'web'];

describe('busy modes', () => {
  it.each([
    ['steer', { mode: 'steer' }],
    ['interrupt', { mode: 'interrupt' }],
    ['queue,discord=steer, web = interrupt', { mode: 'queue', channels: { discord: 'steer', web: 'interrupt' } }],
    ['nonsense', null],
    ['steer,slack=queue', null],
    ['steer,discord=later', null],
  ])('parses CHATGATE_BUSY_MODE %j', (value, expected) => {
    expect(parseBusyModeOption(value, CHANNELS)).toEqual(expected);
  });

  it('reads the chat settings of its version and refuses others by name', () => {
    expect(parseChatSettings(undefined)).toEqual({ v: 1 });
    expect(parseChatSettings('{"v":1,"busyMode":"queue"}')).toEqual({ v: 1, busyMode: 'queue' });
    expect(() => parseChatSettings('{"v":2,"busyMode":"queue"}')).toThrow('chatSettings version 2 is not known');
    expect(() => parseChatSettings('{"v":1,"busyMode":"later"}')).toThrow('not a busy mode');
    expect(() => parseChatSettings('{')).toThrow('not JSON');
  });

  it('lets the chat choose over the channel, and the channel over the deployment', () => {
    const defaults = { mode: 'steer' as const, channels: { discord: 'queue' as const } };
    expect(effectiveBusyMode({ v: 1 }, defaults, 'web')).toBe('steer');
    expect(effectiveBusyMode({ v: 1 }, defaults, 'discord')).toBe('queue');
    expect(effectiveBusyMode({ v: 1, busyMode: 'interrupt' }, defaults, 'discord')).toBe('interrupt');
  });
});
