import { describe, expect, it } from 'vitest';
import type { Channel, ChannelHealth } from '../../channels/channel.js';
import { channelHealthOf, judgeChannels } from '../../src/gateway/channel-health.js';
import { gatewayChannelRows, type GatewayBeat, type HeartbeatStatus } from '../../src/redis/heartbeats.js';

const NOW = 1_800_000_000_000;

function channel(name: 'telegram' | 'discord' | 'web', health?: ChannelHealth, leaseRole?: 'holding' | 'standby'): Channel {
  return { name, ...(health ? { health: () => health } : {}), ...(leaseRole ? { leaseRole } : {}) } as unknown as Channel;
}

function beat(pid: number, gateway: GatewayBeat, alive = true): HeartbeatStatus {
  return { role: 'gateway', id: `h:${pid}:x`, host: 'h', pid, startedAt: NOW, version: '1', beatAt: NOW, ttlMs: 15_000, budgetDigest: 'off', alive, gateway };
}

describe('channelHealthOf', () => {
  it('says connecting and waiting during the start, then standby, connected or disconnected with the reason', () => {
    const down: ChannelHealth = { ok: false, reason: 'getUpdates failed (502: Bad Gateway) (3 times in a row)', sinceMs: NOW - 42_000 };
    const list = [channel('telegram', down), channel('discord', { ok: true }, 'standby'), channel('web')];
    expect(channelHealthOf(list, { state: 'connecting the discord channel', connected: ['telegram'] }, NOW)).toEqual({
      telegram: { state: 'disconnected', reason: down.reason, sinceMs: down.sinceMs }, discord: { state: 'connecting' }, web: { state: 'waiting' },
    });
    const started = channelHealthOf(list, { state: 'ok', connected: ['telegram', 'discord', 'web'] }, NOW);
    expect(started).toMatchObject({ discord: { state: 'standby' }, web: { state: 'connected' } });
  });
});

describe('judgeChannels', () => {
  it('down for a disconnected channel, with how long, why, and the fix; a refused token gets the token fix', () => {
    const rows = gatewayChannelRows([beat(1, {
      httpUrl: 'http://x',
      channels: { telegram: { state: 'disconnected', reason: 'getUpdates failed (401: Unauthorized)', sinceMs: NOW - 90_000, tokenRejected: true }, web: { state: 'connected' } },
    })]);
    const verdict = judgeChannels(rows, 1, NOW);
    expect(verdict).toMatchObject({ status: 'down', detail: 'telegram disconnected for 90 s (getUpdates failed (401: Unauthorized)), web connected' });
    expect(verdict.fix).toMatch(/^TELEGRAM_BOT_TOKEN was rejected/);
  });

  it('a standby gateway is not down; several gateways are named; dead ones are not read', () => {
    const holder = beat(1, { httpUrl: 'http://a', channels: { discord: { state: 'connected' } } });
    const standby = beat(2, { httpUrl: 'http://b', channels: { discord: { state: 'standby' } } });
    const dead = beat(3, { httpUrl: 'http://c', channels: { discord: { state: 'connecting' } } }, false);
    const rows = gatewayChannelRows([holder, standby, dead]);
    expect(judgeChannels(rows, 2, NOW)).toEqual({ status: 'ok', detail: 'h pid 1: discord connected; h pid 2: discord standby' });
  });

  it('down while a channel is still connecting; skip without a gateway', () => {
    const rows = gatewayChannelRows([beat(1, { httpUrl: 'http://a', channels: { telegram: { state: 'connecting' }, web: { state: 'connected' } } })]);
    expect(judgeChannels(rows, 1, NOW)).toMatchObject({ status: 'down', detail: 'telegram connecting, web connected', fix: expect.stringContaining('still connecting') });
    expect(judgeChannels([], 0, NOW)).toEqual({ status: 'skip', detail: 'no gateway is running' });
  });
});
