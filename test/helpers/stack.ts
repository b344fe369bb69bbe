import { gatewayOptions, workerOptions } from '../../src/cli/compose.js';
import { loadConfig, type Config } from '../../src/config.js';
import { SUMMARIZER_MARK } from '../../src/llm/summarizer.js';
import { createSilentLogger } from '../../src/log.js';
import { readerFor } from '../../src/cli/sessions.js';
import { createPrometheusMetrics, type PrometheusMetrics } from '../../src/monitor/metrics.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import type { GatewayChannels } from '../../src/gateway/channels.js';
import { runWorker, type RunningWorker, type RunWorkerOptions } from '../../workers/main.js';
import type { ToolDefinition } from '../../workers/tools/types.js';
import { startFakeOpenAI, type FakeHandler, type FakeOpenAI, type FakeRequest } from '../fakes/openai-server.js';
import { createTestRedis, type TestRedis } from './redis.js';

/** Gateway + one in-process worker (or none: {@link StackOptions.noWorker}) + fake LLM, on real Redis with fresh prefixes. */
export interface Stack {
  t: TestRedis;
  llm: FakeOpenAI;
  config: Config;
  /** What the gateway's /metrics shows; the worker records into it too. */
  metrics: PrometheusMetrics;
  gateway: GatewayHandle;
  /** The in-process worker; null with {@link StackOptions.noWorker}. */
  worker: RunningWorker | null;
  /** Requests the agent made (summariser calls excluded). */
  agentRequests(): FakeRequest[];
  close(): Promise<void>;
}

/** What {@link startStack} takes: the gateway's channels, the fake LLM's answers, config env and worker options on top of the defaults. */
export interface StackOptions {
  /**
   * The gateway's channels, or a function building them on the stack's Redis. Default: the ones its
   * configuration builds (the web chat over the stack's Redis, as `chatgate` wires it).
   */
  channels?: GatewayChannels | ((t: TestRedis) => Promise<GatewayChannels>);
  handler: FakeHandler;
  summary?: FakeHandler;
  env?: Record<string, string>;
  worker?: Partial<RunWorkerOptions>;
  /** Tools the worker offers besides the built-ins. */
  tools?: readonly ToolDefinition[];
  /** Start no worker in this process: the test runs worker processes against the stack's Redis and `llm`. Default false. */
  noWorker?: boolean;
}

/** True for a request the summariser made. */
export function isSummaryRequest(request: FakeRequest): boolean {
  return request.messages.some((m) => m.role === 'system' && typeof m.content === 'string' && m.content.includes(SUMMARIZER_MARK));
}

/** Starts the stack. `handler` answers agent requests; summariser requests get `summary`'s answer (default a short summary). */
export async function startStack(options: StackOptions): Promise<Stack> {
  const t = createTestRedis();
  const summary: FakeHandler = options.summary ?? (() => ({ content: 'Goal: help the user. Active state: conversation summarised.' }));
  const llm = await startFakeOpenAI((request) => (isSummaryRequest(request) ? summary(request) : options.handler(request)));
  const config = loadConfig({
    ...t.env,
    OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'test-key', CHATGATE_MODEL: 'fake-model', CHATGATE_CONTEXT_WINDOW: '16000',
    CHATGATE_RESERVED_OUTPUT_TOKENS: '0', CHATGATE_HTTP_PORT: '0', CHATGATE_LOG_LEVEL: 'silent', ...options.env,
  });
  const logger = createSilentLogger();
  const metrics = createPrometheusMetrics();
  const channels = typeof options.channels === 'function' ? await options.channels(t) : options.channels;
  const gateway = await startGateway({ redis: t.redis, logger, metrics, sessions: readerFor(config, { redis: t.redis }), channels }, gatewayOptions(config));
  const worker = options.noWorker ? null : await runWorker({ redis: t.redis, logger, metrics, tools: options.tools }, {
    keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, queueShards: config.redis.queueShards,
    llm: { baseURL: llm.baseURL, apiKey: 'test-key', model: 'fake-model', retry: { baseDelayMs: 10, maxDelayMs: 50 } },
    contextWindow: config.llm.contextWindow, reservedOutputTokens: config.compaction.reservedOutputTokens,
    threshold: config.compaction.threshold, concurrency: 2, leaseRetryMs: 100, attachments: workerOptions(config).attachments, compactionNotice: config.compaction.notice, ...options.worker,
  });
  return {
    t, llm, config, metrics, gateway, worker,
    agentRequests: () => llm.requests.filter((r) => !isSummaryRequest(r)),
    async close() {
      await worker?.close();
      await gateway.close();
      await llm.close();
      await t.cleanup();
    },
  };
}
