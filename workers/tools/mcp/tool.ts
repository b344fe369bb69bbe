import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { headEnd } from '../../../src/core/text.js';
import type { McpCallOutcome, Metrics } from '../../../src/metrics.js';
import { defineTool, type ToolDefinition } from '../types.js';
import { approvalOf } from './config.js';
import type { McpConnection } from './connection.js';
import { toOfferedSchema } from './input-schema.js';
import { McpCallError } from './connection.js';
import { McpToolError, toToolResult } from './results.js';

/** Longest tool description offered to the model, in UTF-16 units: OpenAI refuses a request holding a longer one. */
export const MAX_DESCRIPTION_CHARS = 1024;
/** The `_meta` key of a side-effecting call's idempotency key (`<session>:<turn>:<call id>`). */
export const IDEMPOTENCY_META_KEY = 'idempotencyKey';

// The server validates the arguments against its own schema; chatgate only checks they are an object.
const ANY_OBJECT = z.record(z.string(), z.unknown());

/**
 * The tool definition of one MCP tool, offered as `name`: its JSON Schema as the provider takes it ({@link toOfferedSchema}), read-only only
 * when the server says `readOnlyHint: true` (else side-effecting, its idempotency key in `_meta`),
 * its approval from the server's configuration, its timeout the server's, its description cut to {@link MAX_DESCRIPTION_CHARS}. Each call is counted in
 * `metrics` by server, tool and outcome.
 */
export function toMcpToolDefinition(connection: McpConnection, tool: Tool, name: string, metrics: Metrics): ToolDefinition {
  const server = connection.server;
  const readOnly = tool.annotations?.readOnlyHint === true;
  const description = bounded(tool.description?.trim() || tool.title || tool.annotations?.title || `${tool.name} (MCP server ${server.name})`);
  return defineTool({
    name,
    description,
    schema: ANY_OBJECT,
    parameters: toOfferedSchema(tool.inputSchema as Record<string, unknown>),
    timeoutMs: server.timeoutMs,
    sideEffects: !readOnly,
    approval: approvalOf(server, tool.name, readOnly),
    async run(args, context) {
      const meta = readOnly ? undefined : { [IDEMPOTENCY_META_KEY]: context.idempotencyKey };
      let outcome: McpCallOutcome = 'ok';
      try {
        return toToolResult(await connection.call(tool.name, args, { signal: context.signal, meta }));
      } catch (err) {
        outcome = outcomeOf(err, context.signal);
        if (err instanceof McpToolError) throw new Error(`MCP server "${server.name}" reported an error: ${err.message}`, { cause: err });
        throw err;
      } finally {
        metrics.record({ type: 'mcp_tool_call', server: server.name, tool: tool.name, outcome });
      }
    },
  }) as ToolDefinition;
}

/** `text` within {@link MAX_DESCRIPTION_CHARS}, marked with `…` where it was cut (never inside a surrogate pair). */
function bounded(text: string): string {
  return text.length <= MAX_DESCRIPTION_CHARS ? text : `${text.slice(0, headEnd(text, MAX_DESCRIPTION_CHARS - 1))}…`;
}

function outcomeOf(err: unknown, signal: AbortSignal): McpCallOutcome {
  if (err instanceof McpToolError) return 'error';
  if (err instanceof McpCallError) return err.reason === 'closed' ? 'unavailable' : err.reason;
  // Aborted by the registry: its timeout, or /stop.
  if (signal.aborted) return (signal.reason as { name?: string } | undefined)?.name === 'TimeoutError' ? 'timeout' : 'cancelled';
  return 'refused';
}
