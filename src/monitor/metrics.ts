import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { MetricEvent, Metrics } from '../metrics.js';

/**
 * The Prometheus adapter of the metrics port (`src/metrics.ts`): one registry per instance, nothing
 * registered globally. Labels are bounded — channel, kind, layer, outcome, queue, state, reason,
 * version — never a session id.
 */

/** Jobs of one queue in one state, as reported by the queue-depth source. */
export interface QueueDepth {
  /** Queue name, e.g. `turns`. */
  queue: string;
  /** BullMQ state: `waiting`, `active`, `delayed`, `failed`, `completed`, `prioritized`, … */
  state: string;
  count: number;
}

/** Returns the current queue depths; called on every scrape of `/metrics`. */
export type QueueDepthSource = () => Promise<readonly QueueDepth[]>;

/** What `/metrics` exposes: a registry, and where its queue-depth gauge reads at scrape time. */
export interface ExposedMetrics {
  readonly registry: Registry;
  /** Sets (or clears, with undefined) where `chatgate_queue_jobs` reads its figures. */
  setQueueDepthSource(source: QueueDepthSource | undefined): void;
}

/** The Prometheus adapter of the port. */
export interface PrometheusMetrics extends Metrics, ExposedMetrics {}

/** Options of {@link createPrometheusMetrics}. */
export interface PrometheusMetricsOptions {
  /** Exposed as `chatgate_build_info{version,node_version} 1`. Default: version `unknown`. */
  build?: { version: string };
  /** Also expose prom-client's default process metrics (CPU, heap, event loop). Default true. */
  processMetrics?: boolean;
}

/**
 * A fresh registry with chatgate's metrics (and, by default, the process metrics). Nothing is
 * registered globally: two instances never share a figure.
 */
export function createPrometheusMetrics(options: PrometheusMetricsOptions = {}): PrometheusMetrics {
  const registry = new Registry();
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  const m = defineMetrics(registry);
  m.buildInfo.set({ version: options.build?.version ?? 'unknown', node_version: process.version }, 1);
  let queueDepthSource: QueueDepthSource | undefined;
  m.defineQueueJobs(() => queueDepthSource);
  return {
    registry,
    setQueueDepthSource(source) {
      queueDepthSource = source;
    },
    record(event) {
      recordInto(m, event);
    },
  };
}

type Defined = ReturnType<typeof defineMetrics>;

function defineMetrics(registry: Registry) {
  const registers = [registry];
  return {
    buildInfo: new Gauge({ name: 'chatgate_build_info', help: 'Always 1; the labels say which chatgate and Node.js run', labelNames: ['version', 'node_version'] as const, registers }),
    tokens: new Counter({ name: 'chatgate_tokens_total', help: 'Tokens reported by the LLM provider, by kind (prompt, completion, cached) and channel', labelNames: ['kind', 'channel'] as const, registers }),
    modelCalls: new Counter({ name: 'chatgate_model_calls_total', help: 'Chat-completion calls of the agent, by channel and outcome (ok, or the failure kind: transient, connection, auth, permanent, context_length)', labelNames: ['channel', 'outcome'] as const, registers }),
    cost: new Counter({ name: 'chatgate_cost_usd_total', help: 'Estimated cost of the agent\'s model calls in USD (list prices), by channel', labelNames: ['channel'] as const, registers }),
    compactions: new Counter({ name: 'chatgate_compactions_total', help: 'Compactions by layer (in-loop, hygiene, reactive, manual) and outcome (compacted, pruned, fallback, noop, aborted)', labelNames: ['layer', 'outcome'] as const, registers }),
    tokensRemoved: new Counter({ name: 'chatgate_compaction_tokens_removed_total', help: 'Tokens removed from session projections by compaction, by layer', labelNames: ['layer'] as const, registers }),
    hygieneFirings: new Counter({ name: 'chatgate_hygiene_firings_total', help: 'Times the gateway hygiene check fired (session over the hygiene threshold), by channel', labelNames: ['channel'] as const, registers }),
    turnDuration: new Histogram({ name: 'chatgate_turn_duration_seconds', help: 'Duration of agent turns in seconds, by channel and outcome', labelNames: ['channel', 'outcome'] as const, buckets: [0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160], registers }),
    deliveryFailures: new Counter({ name: 'chatgate_delivery_failures_total', help: 'Outbound deliveries that failed, by channel and reason (rate_limited, permanent, transient)', labelNames: ['channel', 'reason'] as const, registers }),
    mcpToolCalls: new Counter({ name: 'chatgate_mcp_tool_calls_total', help: 'Calls of MCP servers\' tools, by server, tool and outcome (ok, error, timeout, cancelled, unavailable, refused)', labelNames: ['server', 'tool', 'outcome'] as const, registers }),
    budgetNear: new Counter({ name: 'chatgate_budget_near_limit_total', help: 'Budget limits (user, chat or deployment, a day or a month) that reached the notice share, by channel and model of the call that brought them', labelNames: ['channel', 'model'] as const, registers }),
    budgetExhausted: new Counter({ name: 'chatgate_budget_exhausted_total', help: 'Budget limits used up (each once per subject and period), by channel and model of the call that used them up', labelNames: ['channel', 'model'] as const, registers }),
    usageTokens: new Counter({ name: 'chatgate_usage_tokens_total', help: 'Tokens of committed model calls (agent and summariser, as in the usage rollups), by channel, model and kind (input: prompt not cached, cached, output)', labelNames: ['channel', 'model', 'kind'] as const, registers }),
    usageCalls: new Counter({ name: 'chatgate_usage_model_calls_total', help: 'Committed model calls (agent and summariser, as in the usage rollups), by channel and model', labelNames: ['channel', 'model'] as const, registers }),
    usageCost: new Counter({ name: 'chatgate_usage_cost_usd_total', help: 'Estimated cost in USD of committed model calls with a known price (list prices), by channel and model', labelNames: ['channel', 'model'] as const, registers }),
    usageUnpriced: new Counter({ name: 'chatgate_usage_unpriced_calls_total', help: 'Committed model calls of models without a price (their cost is unknown, not 0), by channel and model', labelNames: ['channel', 'model'] as const, registers }),
    inbound: new Counter({ name: 'chatgate_inbound_messages_total', help: 'Inbound messages seen by the gateway, by channel and outcome', labelNames: ['channel', 'outcome'] as const, registers }),
    defineQueueJobs(source: () => QueueDepthSource | undefined) {
      return new Gauge({
        name: 'chatgate_queue_jobs', help: 'Jobs in each queue by state', labelNames: ['queue', 'state'] as const, registers,
        async collect() {
          const read = source();
          if (!read) return;
          const depths = await read().catch(() => []);
          this.reset();
          for (const depth of depths) this.set({ queue: depth.queue, state: depth.state }, depth.count);
        },
      });
    },
  };
}

function recordInto(m: Defined, event: MetricEvent): void {
  switch (event.type) {
    case 'model_call': {
      const { channel } = event;
      m.modelCalls.inc({ channel, outcome: event.outcome });
      if (event.promptTokens) m.tokens.inc({ kind: 'prompt', channel }, event.promptTokens);
      if (event.completionTokens) m.tokens.inc({ kind: 'completion', channel }, event.completionTokens);
      if (event.cachedTokens) m.tokens.inc({ kind: 'cached', channel }, event.cachedTokens);
      if (event.costUsd) m.cost.inc({ channel }, event.costUsd);
      return;
    }
    case 'compaction': {
      m.compactions.inc({ layer: event.layer, outcome: event.outcome });
      const removed = event.tokensBefore - event.tokensAfter;
      if (removed > 0) m.tokensRemoved.inc({ layer: event.layer }, removed);
      return;
    }
    case 'turn':
      m.turnDuration.observe({ channel: event.channel, outcome: event.outcome }, event.durationMs / 1000);
      return;
    case 'inbound':
      m.inbound.inc({ channel: event.channel, outcome: event.outcome });
      return;
    case 'hygiene_fired':
      m.hygieneFirings.inc({ channel: event.channel });
      return;
    case 'delivery_failure':
      m.deliveryFailures.inc({ channel: event.channel, reason: event.reason });
      return;
    case 'budget_event':
      (event.kind === 'near' ? m.budgetNear : m.budgetExhausted).inc({ channel: event.channel, model: event.model });
      return;
    case 'usage': {
      const labels = { channel: event.channel, model: event.model };
      for (const kind of ['input', 'cached', 'output'] as const) {
        const n = event[`${kind}Tokens`];
        if (n > 0) m.usageTokens.inc({ ...labels, kind }, n);
      }
      if (event.calls > 0) m.usageCalls.inc(labels, event.calls);
      if (event.costUsd > 0) m.usageCost.inc(labels, event.costUsd);
      if (event.unpricedCalls > 0) m.usageUnpriced.inc(labels, event.unpricedCalls);
      return;
    }
    case 'mcp_tool_call':
      m.mcpToolCalls.inc({ server: event.server, tool: event.tool, outcome: event.outcome });
      return;
  }
}
