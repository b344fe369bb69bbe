import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { RetryPolicy } from '../../../src/core/retry.js';
import type { Logger } from '../../../src/log.js';
import { NOOP_METRICS, type Metrics } from '../../../src/metrics.js';
import type { McpServerBeat } from '../../../src/redis/heartbeats.js';
import type { ToolRegistry } from '../registry.js';
import type { McpServerConfig } from './config.js';
import { McpConnection } from './connection.js';
import { nameServerTools, toolKey, type ServerTool } from './tool-names.js';
import { toMcpToolDefinition } from './tool.js';

/** What {@link startMcpServers} needs. */
export interface McpServersDeps {
  /** The registry the servers' tools are added to (and removed from while a server is away). */
  tools: ToolRegistry;
  logger: Logger;
  /** Where each call is counted by server, tool and outcome. Default nowhere. */
  metrics?: Metrics;
}

/** Options of {@link startMcpServers}. */
export interface McpServersOptions {
  servers: readonly McpServerConfig[];
  /** chatgate version, sent as the client's. Default `unknown`. */
  version?: string;
  /** Reconnect backoff (tests shorten it). Default 1 s doubling to 60 s. */
  reconnect?: Partial<RetryPolicy>;
}

/** The MCP servers of one worker process. */
export interface McpServers {
  /** Resolves when every server's first attempt connected or failed (never rejects). */
  ready(): Promise<void>;
  /** Each configured server's state, in configuration order (the heartbeat's `mcp`). */
  status(): McpServerBeat[];
  /** Closes every connection (stdio servers are stopped). */
  close(): Promise<void>;
}

/**
 * Connects to every enabled server and keeps the registry's `mcp__<server>__<tool>` tools in step
 * with what each offers: added when it connects or its list changes, removed while it is away (a
 * call made meanwhile answers that the server is not connected). `deny` tools are never offered.
 */
export function startMcpServers(deps: McpServersDeps, options: McpServersOptions): McpServers {
  const log = deps.logger.child({ component: 'mcp' });
  const metrics = deps.metrics ?? NOOP_METRICS;
  const offered = new Map<string, readonly Tool[]>();
  const registered = new Set<string>();
  const logged = new Set<string>();
  const connections = new Map<string, McpConnection>();
  const sync = () => {
    const entries: Array<ServerTool & { connection: McpConnection; spec: Tool }> = [];
    for (const [server, tools] of offered) for (const spec of tools) entries.push({ server, tool: spec.name, connection: connections.get(server)!, spec });
    const taken = new Set(deps.tools.names().filter((name) => !registered.has(name)));
    const { names, renamed } = nameServerTools(entries, taken);
    for (const rename of renamed) {
      const key = `${toolKey(rename)}\u0000${rename.name}`;
      if (logged.has(key)) continue;
      logged.add(key);
      log.warn({ mcpServer: rename.server, tool: rename.tool, name: rename.name, reason: rename.reason }, 'MCP tool offered under another name');
    }
    for (const name of registered) deps.tools.unregister(name);
    registered.clear();
    for (const entry of entries) {
      const definition = toMcpToolDefinition(entry.connection, entry.spec, names.get(toolKey(entry))!, metrics);
      if (definition.approval === 'deny') continue;
      deps.tools.register(definition);
      registered.add(definition.name);
    }
  };
  for (const server of options.servers) {
    if (!server.enabled) continue;
    const connection = new McpConnection(server, {
      logger: log,
      onTools(name, tools) {
        if (tools.length === 0) offered.delete(name);
        else offered.set(name, tools);
        sync();
      },
    }, { version: options.version ?? 'unknown', reconnect: options.reconnect });
    connections.set(server.name, connection);
  }
  const first = Promise.all([...connections.values()].map((connection) => connection.start())).then(() => undefined);
  return {
    ready: () => first,
    status: () => options.servers.map((server) => connections.get(server.name)?.status() ?? { name: server.name, transport: server.transport.type, state: 'disabled', tools: 0 }),
    async close() {
      await Promise.all([...connections.values()].map((connection) => connection.close()));
    },
  };
}
