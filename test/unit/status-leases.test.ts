import { describe, expect, it } from 'vitest';
import { leasesCheck } from '../../src/cli/status-leases.js';
import type { ChannelLeaseHolder } from '../../src/redis/channel-lease.js';
import type { HeartbeatStatus } from '../../src/redis/heartbeats.js';

const gateway = (host: string, pid: number, alive = true): HeartbeatStatus => ({
  role: 'gateway', id: `${host}:${pid}:abc`, host, pid, startedAt: 0, version: '1', beatAt: 0, ttlMs: 15_000, budgetDigest: 'off', alive,
  gateway: { httpUrl: 'http://127.0.0.1:1', channels: {} },
});
const row = (holder?: string): ChannelLeaseHolder => ({ channel: 'telegram', botId: '0123456789abcdef', ...(holder ? { holder, fence: 3, heldSinceMs: 0, expiresInMs: 9000 } : {}) });

describe('leasesCheck', () => {
  it.each([
    ['a live holder and a standby', [row('a:1')], [gateway('a', 1), gateway('b', 2)], 'ok', /telegram \(bot 0123456789abcdef\) held by a pid 1 since .*; standing by: b pid 2/],
    ['a holder that sends no heartbeat', [row('gone:9')], [gateway('b', 2)], 'down', /held by gone:9, which sends no heartbeat; standing by: b pid 2/],
    ['nobody holding', [row()], [gateway('b', 2)], 'down', /held by nobody; standing by: b pid 2/],
    ['a dead gateway only', [row('a:1')], [gateway('a', 1, false)], 'skip', /no gateway is running/],
    ['no lease ever taken', [], [gateway('a', 1)], 'skip', /no leased channel/],
  ] as const)('%s', (_name, rows, gateways, status, detail) => {
    const check = leasesCheck(rows, gateways);
    expect(check.status).toBe(status);
    expect(check.detail).toMatch(detail);
    expect(check.fix !== undefined).toBe(status === 'down');
  });
});
