import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics of chatgate. One registry per process ({@link metricsRegistry}); components
 * import the metric objects (or the `record*` helpers) and increment them. Labels are bounded:
 * channel, kind, layer, outcome, queue, state, reason — never a session id.
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

/** The registry `/metrics` exposes: the metrics below plus the default process metrics. */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

/** Tokens billed, by `kind` (`prompt` | `completion` | `cached`) and `channel`. */
export const tokensTotal = new Counter({
  name: 'chatgate_tokens_total',
  help: 'Tokens reported by the LLM provider, by kind (prompt, completion, cached) and channel',
  labelNames: ['kind', 'channel'] as const,
  registers: [metricsRegistry],
});

/** Model calls, by `channel` and `outcome` (`ok` | `error` | `context_length`). */
export const modelCallsTotal = new Counter({
  name: 'chatgate_model_calls_total',
  help: 'Chat-completion calls to the LLM endpoint, by channel and outcome',
  labelNames: ['channel', 'outcome'] as const,
  registers: [metricsRegistry],
});

/** Compactions, by `layer` (`in-loop` | `hygiene` | `reactive` | `manual`) and `outcome`. */
export const compactionsTotal = new Counter({
  name: 'chatgate_compactions_total',
  help: 'Compactions by layer (in-loop, hygiene, reactive, manual) and outcome (compacted, pruned, fallback, noop, aborted)',
  labelNames: ['layer', 'outcome'] as const,
  registers: [metricsRegistry],
});

/** Tokens removed from projections by compaction, by `layer`. */
export const compactionTokensRemovedTotal = new Counter({
  name: 'chatgate_compaction_tokens_removed_total',
  help: 'Tokens removed from session projections by compaction, by layer',
  labelNames: ['layer'] as const,
  registers: [metricsRegistry],
});

/** Times the gateway hygiene check decided to compact, by `channel`. */
export const hygieneFiringsTotal = new Counter({
  name: 'chatgate_hygiene_firings_total',
  help: 'Times the gateway hygiene check fired (session over the hygiene threshold), by channel',
  labelNames: ['channel'] as const,
  registers: [metricsRegistry],
});

/** Duration of one turn (inbox drained → reply committed), seconds, by `channel` and `outcome`. */
export const turnDurationSeconds = new Histogram({
  name: 'chatgate_turn_duration_seconds',
  help: 'Duration of agent turns in seconds, by channel and outcome',
  labelNames: ['channel', 'outcome'] as const,
  buckets: [0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160],
  registers: [metricsRegistry],
});

/** Reply chunks that could not be delivered, by `channel` and `reason` (`rate_limited` | `permanent` | `transient`). */
export const deliveryFailuresTotal = new Counter({
  name: 'chatgate_delivery_failures_total',
  help: 'Outbound deliveries that failed, by channel and reason',
  labelNames: ['channel', 'reason'] as const,
  registers: [metricsRegistry],
});

/** Inbound messages at the gateway, by `channel` and `outcome` (`accepted` | `duplicate` | `denied` | `rate_limited` | `too_long` | `command`). */
export const inboundMessagesTotal = new Counter({
  name: 'chatgate_inbound_messages_total',
  help: 'Inbound messages seen by the gateway, by channel and outcome',
  labelNames: ['channel', 'outcome'] as const,
  registers: [metricsRegistry],
});

let queueDepthSource: QueueDepthSource | undefined;

/** Jobs per queue and state, read from {@link setQueueDepthSource}'s callback at scrape time. */
export const queueJobs = new Gauge({
  name: 'chatgate_queue_jobs',
  help: 'Jobs in each queue by state',
  labelNames: ['queue', 'state'] as const,
  registers: [metricsRegistry],
  async collect() {
    if (!queueDepthSource) return;
    const depths = await queueDepthSource().catch(() => []);
    this.reset();
    for (const depth of depths) this.set({ queue: depth.queue, state: depth.state }, depth.count);
  },
});

/** Sets (or clears, with undefined) where `chatgate_queue_jobs` reads its figures. */
export function setQueueDepthSource(source: QueueDepthSource | undefined): void {
  queueDepthSource = source;
}

/** Usage of one model call, as the provider reported it. */
export interface ModelCallRecord {
  channel: string;
  promptTokens: number;
  completionTokens: number;
  cachedTokens?: number;
  outcome?: 'ok' | 'error' | 'context_length';
}

/** Records one model call: `chatgate_model_calls_total` and `chatgate_tokens_total`. */
export function recordModelCall(usage: ModelCallRecord): void {
  modelCallsTotal.inc({ channel: usage.channel, outcome: usage.outcome ?? 'ok' });
  tokensTotal.inc({ kind: 'prompt', channel: usage.channel }, usage.promptTokens);
  tokensTotal.inc({ kind: 'completion', channel: usage.channel }, usage.completionTokens);
  if (usage.cachedTokens) tokensTotal.inc({ kind: 'cached', channel: usage.channel }, usage.cachedTokens);
}

/** Records one compaction: `chatgate_compactions_total` and the tokens it removed. */
export function recordCompaction(event: { layer: string; outcome: string; tokensBefore: number; tokensAfter: number }): void {
  compactionsTotal.inc({ layer: event.layer, outcome: event.outcome });
  const removed = event.tokensBefore - event.tokensAfter;
  if (removed > 0) compactionTokensRemovedTotal.inc({ layer: event.layer }, removed);
}
