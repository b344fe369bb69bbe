import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ToolCall } from '../../src/core/messages.js';
import { createMemoryMetrics } from '../../src/metrics.js';
import { createSilentLogger, type Logger } from '../../src/log.js';
import { parseMcpConfig, type McpServerConfig } from '../../workers/tools/mcp/config.js';
import { startMcpServers, type McpServers } from '../../workers/tools/mcp/manager.js';
import { ToolRegistry } from '../../workers/tools/registry.js';
import type { ToolContext } from '../../workers/tools/types.js';

const require = createRequire(import.meta.url);

/** `node_modules/@modelcontextprotocol/<name>/dist/index.js`, the real server's entry point. */
export function mcpServerEntry(name: 'server-filesystem' | 'server-everything'): string {
  return join(dirname(require.resolve(`@modelcontextprotocol/${name}/package.json`)), 'dist', 'index.js');
}

/** The stdio test server (test/fixtures/mcp-test-server.mjs). */
export const TEST_SERVER = fileURLToPath(new URL('../fixtures/mcp-test-server.mjs', import.meta.url));

/** Servers from an `mcpServers` object, as the configuration reads them. @throws when it has problems. */
export function mcpServers(servers: Record<string, unknown>, env: Record<string, string> = {}): McpServerConfig[] {
  const parsed = parseMcpConfig({ mcpServers: servers }, env);
  if (parsed.issues.length > 0) throw new Error(parsed.issues.join('; '));
  return parsed.servers;
}

/** A registry with the built-ins and the servers' tools, their connections, and the metrics they record. */
export interface McpRig {
  tools: ToolRegistry;
  servers: McpServers;
  metrics: ReturnType<typeof createMemoryMetrics>;
  /** Runs a tool call through the registry, as the tool loop does. */
  call(name: string, args: unknown, signal?: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

/** Starts the servers (reconnecting after 50 ms) and waits for their first attempts. */
export async function openMcpRig(servers: McpServerConfig[], logger: Logger = createSilentLogger()): Promise<McpRig> {
  const tools = new ToolRegistry();
  const metrics = createMemoryMetrics();
  const manager = startMcpServers({ tools, logger, metrics }, { servers, version: 'test', reconnect: { baseDelayMs: 50, maxDelayMs: 200 } });
  await manager.ready();
  let calls = 0;
  return {
    tools, servers: manager, metrics,
    call(name, args, signal) {
      const id = `call_${++calls}`;
      const call: ToolCall = { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
      return tools.execute(call, testContext(id), signal).then((result) => result.text);
    },
    close: () => manager.close(),
  };
}

function testContext(callId: string): Omit<ToolContext, 'signal'> {
  return {
    sessionId: 'test:1', callId, idempotencyKey: `test:1:turn-1:${callId}`,
    notes: { list: async () => ({}), set: async () => undefined, remove: async () => false },
    searchTranscript: async () => [], requestCompaction: () => undefined, now: () => new Date(),
  };
}

/** The everything server over Streamable HTTP (or the older SSE transport) on a free port; `close()` stops it. */
export async function startEverythingServer(transport: 'streamableHttp' | 'sse' = 'streamableHttp'): Promise<{ url: string; close(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [mcpServerEntry('server-everything'), transport], { env: { PATH: process.env.PATH, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on port|running on port/i.test(output)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the everything server exited (${code}): ${output}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
