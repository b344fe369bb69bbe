import type { Config } from '../config.js';
import { mcpServerRows, type HeartbeatStatus } from '../redis/heartbeats.js';

/** How the MCP servers stand across the live workers: `warn` when one is not connected somewhere. */
export interface McpVerdict {
  status: 'ok' | 'warn' | 'skip';
  detail: string;
  fix?: string;
}

/**
 * Judges the MCP servers from the live workers' heartbeats (each worker connects on its own):
 * every server per worker, connected or not, its tool count and last error. The one judgement
 * `chatgate status` and `doctor` print. @returns null when no server is configured.
 */
export function judgeMcpServers(config: Pick<Config, 'mcp'>, beats: readonly HeartbeatStatus[]): McpVerdict | null {
  if (config.mcp.servers.length === 0) return null;
  const rows = mcpServerRows(beats);
  if (rows.length === 0) return { status: 'skip', detail: `${config.mcp.servers.length} configured in ${config.mcp.file ?? 'the MCP file'}; no live worker reports them yet` };
  const lines = rows.map((row) => {
    // A connected server's last error (a line that was not JSON-RPC, a reconnect) still says what went wrong.
    const error = !row.lastError ? '' : row.state === 'connected' ? ` (last error: ${row.lastError})` : ` (${row.lastError})`;
    return `${row.name} on ${row.worker.host} pid ${row.worker.pid}: ${row.state}, ${row.tools} tool${row.tools === 1 ? '' : 's'}${error}`;
  });
  const away = rows.filter((row) => row.state !== 'connected' && row.state !== 'disabled');
  if (away.length === 0) return { status: 'ok', detail: lines.join('; ') };
  return {
    status: 'warn', detail: lines.join('; '),
    fix: `check ${[...new Set(away.map((row) => row.name))].join(', ')} in ${config.mcp.file ?? 'the MCP file'} (command, args or url) and the worker's log; workers reconnect by themselves`,
  };
}
