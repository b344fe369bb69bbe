import { describe, expect, it } from 'vitest';
import { judgeMcpServers } from '../../src/cli/mcp-check.js';
import type { Config } from '../../src/config.js';
import type { HeartbeatStatus, McpServerBeat } from '../../src/redis/heartbeats.js';

const config = { mcp: { file: 'chatgate.mcp.json', servers: [{ name: 'filesystem' }, { name: 'everything' }] } } as unknown as Pick<Config, 'mcp'>;
const worker = (host: string, pid: number, mcp: McpServerBeat[], alive = true): HeartbeatStatus => ({
  role: 'worker', id: `${host}:${pid}:abc`, host, pid, startedAt: 0, version: '1', beatAt: 0, ttlMs: 15_000, budgetDigest: 'off', alive,
  worker: { queue: 'turns', concurrency: 4, llm: { model: 'm' } as never, turnsDone: 0, turnsFailed: 0, mcp },
});
const fs = (extra: Partial<McpServerBeat> = {}): McpServerBeat => ({ name: 'filesystem', transport: 'stdio', state: 'connected', tools: 14, ...extra });
const ev = (extra: Partial<McpServerBeat> = {}): McpServerBeat => ({ name: 'everything', transport: 'http', state: 'connected', tools: 1, ...extra });

describe('judgeMcpServers (chatgate status and doctor)', () => {
  it('lists each server per live worker: its state, tool count and last error', () => {
    const verdict = judgeMcpServers(config, [
      worker('a', 1, [fs(), ev({ lastError: 'protocol error: not JSON' })]),
      worker('b', 2, [fs({ state: 'reconnecting', tools: 0, lastError: 'could not start: spawn npx ENOENT' }), ev()]),
      worker('gone', 3, [fs({ state: 'reconnecting' })], false),
    ]);
    expect(verdict).toEqual({
      status: 'warn',
      detail: 'filesystem on a pid 1: connected, 14 tools; everything on a pid 1: connected, 1 tool (last error: protocol error: not JSON); '
        + 'filesystem on b pid 2: reconnecting, 0 tools (could not start: spawn npx ENOENT); everything on b pid 2: connected, 1 tool',
      fix: expect.stringMatching(/^check filesystem in chatgate\.mcp\.json/),
    });
  });

  it('is ok when every server is connected everywhere, waits for a worker, and is absent without servers', () => {
    expect(judgeMcpServers(config, [worker('a', 1, [fs(), ev()])])).toMatchObject({ status: 'ok' });
    expect(judgeMcpServers(config, [])).toMatchObject({ status: 'skip', detail: '2 configured in chatgate.mcp.json; no live worker reports them yet' });
    expect(judgeMcpServers({ mcp: { servers: [] } } as unknown as Pick<Config, 'mcp'>, [])).toBeNull();
  });
});
