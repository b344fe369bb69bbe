/**
 * The metrics port: components take a {@link Metrics} in their deps and record events into it
 * ({@link NOOP_METRICS} when none is given). The Prometheus adapter (`createPrometheusMetrics` in
 * `src/monitor/metrics.ts`) is built by the composition root, one per process, and exposed at
 * `/metrics`. Labels are bounded — channel, kind, layer, outcome, reason, an MCP server and tool from the
 * operator's configuration — never a session id.
 */

/** How a model call ended: `ok`, or the `LlmError` kind of its failure (`transient`, `connection`, `auth`, …). */
export type ModelCallOutcome = 'ok' | 'context_length' | 'transient' | 'auth' | 'permanent' | 'connection' | (string & {});

/** Why a reply chunk was not delivered. */
export type DeliveryFailureReason = 'rate_limited' | 'permanent' | 'transient';

/** One thing worth counting. */
export type MetricEvent =
  /** One chat-completion call of the agent, answered or failed; usage and cost only when answered. */
  | { type: 'model_call'; channel: string; outcome: ModelCallOutcome; promptTokens?: number; completionTokens?: number; cachedTokens?: number; costUsd?: number }
  /** One compaction of any layer (`in-loop`, `hygiene`, `reactive`, `manual`). */
  | { type: 'compaction'; layer: string; outcome: string; tokensBefore: number; tokensAfter: number }
  /** One turn, inbox drained → reply committed (or failed), ms. */
  | { type: 'turn'; channel: string; outcome: 'ok' | 'error' | 'lease-lost'; durationMs: number }
  /** One inbound message at the gateway (`accepted`, `duplicate`, `denied`, `rate_limited`, `too_long`, `command`; `malformed`: a payload the channel's library could not read). */
  | { type: 'inbound'; channel: string; outcome: string }
  /** The gateway hygiene check compacted a session before dispatch. */
  | { type: 'hygiene_fired'; channel: string }
  /** A reply could not be delivered (this attempt). */
  | { type: 'delivery_failure'; channel: string; reason: DeliveryFailureReason }
  /** A budget limit reached its notice share or was used up (said once per level, subject and period). No user or session label. */
  | { type: 'budget_event'; kind: 'near' | 'exhausted'; channel: string; model: string }
  /**
   * Usage a session commit wrote into the rollups (src/usage), for one model: every model call
   * (the agent's and the summariser's), counted once, when committed. By channel and model only.
   */
  | { type: 'usage'; channel: string; model: string; inputTokens: number; cachedTokens: number; outputTokens: number; calls: number; costUsd: number; unpricedCalls: number }
  /** One call of an MCP server's tool (its name on the server, not the model's), and how it ended. */
  | { type: 'mcp_tool_call'; server: string; tool: string; outcome: McpCallOutcome };

/**
 * How an MCP tool call ended: `ok`; `error` (the tool reported `isError`); `timeout`; `cancelled`
 * (`/stop`); `unavailable` (the server was away or closed during the call); `refused` (a protocol error).
 */
export type McpCallOutcome = 'ok' | 'error' | 'timeout' | 'cancelled' | 'unavailable' | 'refused';

/** Where components record what happened. Must not throw. */
export interface Metrics {
  record(event: MetricEvent): void;
}

/** Records nothing: the default of every component that takes a {@link Metrics}. */
export const NOOP_METRICS: Metrics = Object.freeze({ record: () => undefined });

/** A {@link Metrics} that keeps every event in `events` (tests, embedders). */
export function createMemoryMetrics(): Metrics & { readonly events: MetricEvent[] } {
  const events: MetricEvent[] = [];
  return { events, record: (event) => void events.push(event) };
}
