import { recordCommittedUsage } from '../usage/usage-metrics.js';
import { createBudgetGuard } from '../budget/guard.js';
import { createBudgetLedger, type BudgetLedger } from '../budget/ledger.js';
import { watchBudgetMarkers } from '../budget/markers.js';
import { hasBudgets, type BudgetSettings } from '../core/budget.js';
import type { Queue } from 'bullmq';
import { Hono } from 'hono';
import type { Channel } from '../../channels/channel.js';
import { stripUndefined } from '../core/option-checks.js';
import type { ChannelName, InboundMessage } from '../core/inbound.js';
import type { Logger } from '../log.js';
import { createMonitorApp, type MonitorDeps } from '../monitor/app.js';
import { readQueueDepths } from '../monitor/bull-board.js';
import { createPrometheusMetrics, type PrometheusMetrics } from '../monitor/metrics.js';
import type { SessionView } from '../core/session-view.js';
import type { TokenCounter } from '../core/tokens.js';
import { resolveQueueNames, shardPrefixes, turnDedupId, type QueueNames, type TurnJobData } from '../queue/names.js';
import { guardTurnProducer, holdQueueLayout } from '../queue/shard-layout-guard.js';
import { openShardedQueue, type ShardedQueue } from '../queue/sharded.js';
import { openOutboundQueue, type OutboundQueue } from '../outbound/outbound-queue.js';
import { createTurnProducer } from '../queue/producer.js';
import { TURN_SIGNALS, type TurnSignal } from '../queue/signals.js';
import { duplicateRedis, type RedisClient } from '../redis/client.js';
import { createRedisSessionView } from '../redis/session-reader.js';
import { createSessionStore } from '../redis/session-store.js';
import { createLlmSessionOps, DEFAULT_SYSTEM_PROMPT } from '../session/session-ops.js';
import { createLlmSideQuestion } from '../session/side-question.js';
import { createRetry } from '../session/retry-command.js';
import { createChannels, type GatewayChannels } from './channels.js';
import type { TurnPosition } from './commands.js';
import { createDelivery } from '../outbound/delivery.js';
import { GATEWAY_DEFAULTS, gatewayOptionIssues, type GatewayOptions, type ResolvedGatewayOptions } from './gateway-options.js';
import { ConfigError } from '../errors.js';
import { createRedisDeliveryLedger } from '../outbound/delivery-ledger.js';
import { createIngest, type Ingest } from './ingest.js';
import { createAttachmentIngest } from './attachments.js';
import { createOutboundConsumer } from '../outbound/consumer.js';
import { closeServer, ensurePortFree, listen } from './http-server.js';
import { startChannels, type ChannelsStatus } from './start-channels.js';
import { assertChannelsUp, channelHealthOf, readChannelsPanel } from './channel-health.js';
import { startPendingSweeper } from './sweeper.js';
import { createApprovalStore } from '../approvals/store.js';
import { startApprovalExpiry } from '../approvals/expiry.js';
import { createDecisionDisplay } from './show-decision.js';
import { checkLiveWorkers, noLiveWorker, startGatewayHeartbeat } from './heartbeat.js';
import { startWorkerWatch } from './worker-watch.js';
import { DEFAULT_HEARTBEAT_TTL_MS } from '../redis/heartbeats.js';
import { startGatewayLiveReplies, type GatewayLiveReplies } from '../live-reply/gateway-live-replies.js';
import { createTypingIndicators, type TypingIndicators } from './typing.js';
import { API_MODEL_ID } from '../../channels/openai-api/shapes.js';

/** A running gateway: channels, ingest, hygiene, delivery, and the HTTP server (monitor + web chat). */
export interface GatewayHandle {
  /** Base URL of the HTTP server, e.g. `http://127.0.0.1:8787`. */
  httpUrl: string;
  /** URL of the web chat page, when the web channel runs. */
  webChatUrl?: string;
  /** The OpenAI-compatible API's base URL and the model id it answers to, when that channel runs. */
  api?: { baseUrl: string; model: string };
  /** The ingest pipeline (tests and embedders may feed it directly). */
  ingest: Ingest;
  /** Stops the channels, drains deliveries, closes the server and the connections it opened. */
  close(): Promise<void>;
}

export { GATEWAY_DEFAULTS };
export type { GatewayOptions, ResolvedGatewayOptions };

/** Dependencies of {@link startGateway}. */
export interface GatewayDeps {
  /** A connection with `maxRetriesPerRequest: null` (BullMQ workers); the gateway derives a fail-fast one for ingest. */
  redis: RedisClient;
  logger: Logger;
  /** What the monitor's sessions API and dashboard read. */
  sessions: SessionView;
  /** The dashboard's status panel: the report `chatgate status` prints (the composition root builds it). Default none. */
  status?: MonitorDeps['status'];
  /** Usage over time for `/api/usage` and the overview page (the composition root builds it). Default none. */
  usage?: MonitorDeps['usage'];
  /** Channels to run instead of the ones built from `options.channels` (tests, embedders). */
  channels?: GatewayChannels;
  /**
   * The process's metrics: the gateway records into them and exposes them at `/metrics` (give the
   * in-process worker the same instance). Default: a registry of the gateway's own.
   */
  metrics?: PrometheusMetrics;
  /** Ends the start early (a stop signal while a channel still connects): what was opened is closed. */
  signal?: AbortSignal;
  /** Counts tokens for hygiene and the chat commands (share the process's). Default: one of the gateway's own. */
  tokenCounter?: TokenCounter;
  /** Told of each start step a person may wait on (e.g. `connecting the telegram channel…`). */
  onProgress?: (text: string) => void;
}

/** Hygiene runs after the acknowledgement and holds its own session's turn: one summariser try, this long at most, ms. */
const HYGIENE_SUMMARY_TIMEOUT_MS = 20_000;
/** How long ingest's Redis commands and each readiness check may take before they count as failed, ms. */
const REDIS_ANSWER_MS = 750;
/** `/compact` runs in the background: its summary may take this long, ms. */
const COMMAND_SUMMARY_TIMEOUT_MS = 120_000;
/** How long a stopping gateway waits for the replies being delivered, ms: within the CLI's 10 s shutdown bound, leaving the channels time to stop. */
const OUTBOUND_CLOSE_TIMEOUT_MS = 5_000;

/**
 * Starts the gateway: the HTTP server first, then the channels, so nothing arrives before it can be
 * handled. Options are resolved against {@link GATEWAY_DEFAULTS}, then validated. A failure part-way
 * closes what was opened and rethrows.
 * @throws ConfigError naming every option that breaks its rule (before anything is started).
 */
export async function startGateway(deps: GatewayDeps, options: GatewayOptions): Promise<GatewayHandle> {
  const o: ResolvedGatewayOptions = { ...GATEWAY_DEFAULTS, ...stripUndefined(options), llm: options.llm, contextWindow: options.contextWindow };
  const issues = gatewayOptionIssues(o);
  if (issues.length > 0) throw new ConfigError(issues);
  const metrics = deps.metrics ?? createPrometheusMetrics();
  const log = deps.logger.child({ component: 'gateway' });
  const closers: Array<() => Promise<unknown>> = [];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch((err: unknown) => log.warn({ err }, 'gateway shutdown step failed'));
  };
  try {
    // Before any connection opens: a port in use is one clear error, with nothing to undo.
    await ensurePortFree(o.host, o.port);
    const parts = await startParts({ ...deps, metrics }, o, closers);
    log.info({ httpUrl: parts.httpUrl, webChatUrl: parts.webChatUrl, channels: parts.channels }, 'gateway started');
    return {
      httpUrl: parts.httpUrl, webChatUrl: parts.webChatUrl, api: parts.api, ingest: parts.ingest,
      async close() {
        await closeAll();
        log.info({}, 'gateway stopped');
      },
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

type Started = GatewayDeps & { metrics: PrometheusMetrics };

async function startParts(deps: Started, o: ResolvedGatewayOptions, closers: Array<() => Promise<unknown>>) {
  const { redis, logger, metrics, tokenCounter } = deps;
  const names = resolveQueueNames({ queuePrefix: o.queuePrefix, queueShards: o.queueShards });
  const keyPrefix = o.keyPrefix;
  // Ingest fails fast when Redis is down, so platforms re-deliver and the web chat answers 503.
  const failFastRedis = duplicateRedis(redis, { maxRetriesPerRequest: 2 });
  // Its failures surface where its commands fail; without a listener ioredis prints each one.
  failFastRedis.on('error', (err: Error) => logger.debug({ err }, 'gateway redis connection error'));
  closers.push(() => failFastRedis.quit());
  // Held while the gateway runs: another shard count recorded since makes it stop enqueueing turns.
  const layout = await holdQueueLayout({ redis: failFastRedis, logger }, names, { ttlMs: o.heartbeatTtlMs ?? DEFAULT_HEARTBEAT_TTL_MS });
  closers.push(() => layout.release());
  const store = createSessionStore({ redis: failFastRedis, logger, onCommitted: recordCommittedUsage(metrics) }, { keyPrefix, transcriptRetention: o.transcriptRetention, usageRetention: o.usageRetention });
  const producer = guardTurnProducer(createTurnProducer({ redis: failFastRedis }, { ...names, keyPrefix, groupMode: o.groupMode }), layout);
  const outbound = openOutboundQueue(failFastRedis, names);
  const turns = openShardedQueue<TurnJobData>(names.turnQueue, names, failFastRedis);
  turns.onError((err) => logger.debug({ err, queue: turns.name }, 'gateway queue connection error'));
  closers.push(() => Promise.all([turns.close(), producer.close()]));
  const sweeper = startPendingSweeper({ redis: failFastRedis, producer, logger }, { keyPrefix });
  closers.push(async () => sweeper.stop());
  // A decision is shown on its question through the channels, once they exist (the expiry may decide before).
  let decisionChannels: ReadonlyMap<ChannelName, Channel> = new Map();
  const showDecision = createDecisionDisplay({ channels: () => decisionChannels, ledger: createRedisDeliveryLedger({ redis: failFastRedis }, { keyPrefix }), logger });
  const approvals = { store: createApprovalStore(failFastRedis, { keyPrefix, transcriptRetention: o.transcriptRetention }), producer, logger, admins: o.approvalAdmins ?? [], showDecision };
  const expiry = startApprovalExpiry(approvals, { intervalMs: o.approvalSweepIntervalMs });
  closers.push(async () => expiry.stop());
  // The summariser's calls (hygiene, `/compact`) go through the budget wrapper, as every model call.
  const budgetGuard = o.budgets && createBudgetGuard({ redis: failFastRedis, logger, metrics }, { keyPrefix, settings: o.budgets, prices: o.prices, defaultMaxTokens: o.reservedOutputTokens || 4096, tokenCounter });
  // At shutdown, budget alerts still retried get a short wait; those left are named in a warn line.
  if (budgetGuard) closers.push(() => budgetGuard.alerts.close());
  const opsWith = (llmTimeoutMs: number, llmMaxRetries: number) => createLlmSessionOps({ redis: failFastRedis, logger, store, metrics, tokenCounter, guardLlm: budgetGuard?.llm }, {
    ...sessionFigures(o), keyPrefix, leaseTtlMs: o.sessionLeaseTtlMs, systemPrompt: o.systemPrompt, llmTimeoutMs, llmMaxRetries, llmStream: o.liveReplies, prices: o.prices,
  });
  const ops = opsWith(COMMAND_SUMMARY_TIMEOUT_MS, 1);
  const hygiene = opsWith(HYGIENE_SUMMARY_TIMEOUT_MS, 0);
  // The chat commands read the sessions this gateway serves, through the same view as every surface.
  const view = createRedisSessionView({ redis: failFastRedis }, {
    keyPrefix, contextWindow: o.contextWindow, reservedOutputTokens: o.reservedOutputTokens,
    model: o.llm.model, summaryModel: o.llm.summaryModel, threshold: o.threshold, hygieneThreshold: o.hygieneThreshold,
  });
  // Ingest answers a platform within a second even when Redis hangs: its commands are bounded.
  const ingestRedis = duplicateRedis(redis, { maxRetriesPerRequest: 2, commandTimeout: REDIS_ANSWER_MS });
  ingestRedis.on('error', (err: Error) => logger.debug({ err }, 'ingest redis connection error'));
  closers.push(() => ingestRedis.quit());
  // Files are stored through the fail-fast connection: a 10 MB SET may take longer than ingest's bounded commands.
  const attachments = createAttachmentIngest({ redis: failFastRedis, log: logger, channel: (name) => channelMap.get(name) }, {
    keyPrefix, maxBytes: o.maxAttachmentBytes, ttlSeconds: o.attachmentTtlSeconds, transcription: o.transcribeModel !== undefined,
  });
  const retry = createRetry({ redis: failFastRedis, store, logger }, { leaseTtlMs: o.sessionLeaseTtlMs });
  const budget = o.budgets && hasBudgets(o.budgets) ? await startBudgetCheck(failFastRedis, logger, keyPrefix, o.budgets, closers) : undefined;
  const ingest = createIngest({ redis: ingestRedis, producer, ops, hygiene, outbound, logger, metrics, attachments, retry, approvals, budget, commands: { view, turnPosition: (id) => turnPosition(turns.forSession(id), id), noWorker: () => noLiveWorker(failFastRedis, keyPrefix), btw: sideQuestion(o, { redis: failFastRedis, store, logger, guardLlm: budgetGuard?.llm }) } }, {
    keyPrefix, allow: o.allow, rateLimitPerMinute: o.rateLimitPerMinute, maxMessageChars: o.maxMessageChars, groupMode: o.groupMode, compactionNotice: o.compactionNotice, dedupeTtlSeconds: o.seenTtlSeconds, busyMode: o.busyMode,
  });
  const gatewayChannels = deps.channels ?? await createChannels({ logger, redis: failFastRedis, metrics }, { ...o.channels, host: o.host, monitorToken: o.monitorToken, keyPrefix, maxAttachmentBytes: o.maxAttachmentBytes, lease: { ttlMs: o.channelLeaseMs } });
  const channelMap = new Map<ChannelName, Channel>(gatewayChannels.list.map((c) => [c.name, c]));
  decisionChannels = channelMap;
  const app = new Hono();
  gatewayChannels.mount?.(app);
  const channelsStatus: ChannelsStatus = { state: 'starting' };
  app.route('/', createMonitorApp({
    // bull-board shows the turn queue; the outbound streams are counted beside it in `chatgate_queue_jobs`.
    sessions: deps.sessions, queues: turns.shards, queueDepth: () => queueDepths(turns, outbound), logger, metrics,
    checks: { ...readinessChecks(failFastRedis, turns, { list: gatewayChannels.list, status: channelsStatus }, keyPrefix), queueLayout: async () => layout.check() },
    // Telegram polling and Discord run in one gateway at a time: `holding` here, or `standby` (ready too).
    readyDetails: () => ({ channelLeases: gatewayChannels.leaseRoles?.() ?? {} }),
    channels: () => readChannelsPanel(failFastRedis, keyPrefix),
    status: deps.status,
    usage: deps.usage,
  }, { host: o.host, monitorToken: o.monitorToken, checkTimeoutMs: REDIS_ANSWER_MS }));
  const { server, httpUrl } = await listen(app, o.host, o.port, o.httpTimeouts);
  closers.push(() => closeServer(server));
  const heartbeat = await startGatewayHeartbeat({ redis: failFastRedis, logger }, gatewayChannels.list, channelsStatus, {
    keyPrefix, ttlMs: o.heartbeatTtlMs ?? DEFAULT_HEARTBEAT_TTL_MS, httpUrl, version: o.version ?? 'unknown', budgets: o.budgets,
  });
  closers.push(() => heartbeat.stop());
  const workerWatch = startWorkerWatch({ redis: failFastRedis, logger }, { keyPrefix });
  closers.push(async () => workerWatch.stop());
  // Closed after the channels stop (closers run in reverse): accepted messages finish their hygiene and get their turn.
  closers.push(() => ingest.idle());
  const handle = (message: InboundMessage) => ingest.receive(message);
  await startChannels(gatewayChannels.list, handle, channelsStatus, {
    timeoutMs: o.channelStartTimeoutMs, signal: deps.signal, onProgress: deps.onProgress, onStarting: (stop) => closers.push(stop),
  });
  // Beat now: `chatgate status` right after start sees the channels connected, not the first beat's "connecting".
  await heartbeat.beat();
  // Replies go out once every channel can send (and stop first, while the channels still can).
  await startDelivery(deps, keyPrefix, { channels: channelMap, deliverOnly: gatewayChannels.deliverOnly ?? [] }, names, closers, o);
  return {
    httpUrl, ingest, webChatUrl: channelMap.has('web') ? `${httpUrl}/chat` : undefined, channels: [...channelMap.keys()],
    api: channelMap.has('api') ? { baseUrl: `${httpUrl}/v1`, model: API_MODEL_ID } : undefined,
  };
}

/** The early answer's ledger, with a copy of the exhaustion markers: a message costs no Redis command for it. */
async function startBudgetCheck(redis: RedisClient, logger: Logger, keyPrefix: string, settings: BudgetSettings, closers: Array<() => Promise<unknown>>): Promise<{ ledger: BudgetLedger; timeZone: string }> {
  const subscriber = duplicateRedis(redis, { maxRetriesPerRequest: null });
  subscriber.on('error', (err: Error) => logger.debug({ err }, 'budget marker connection error'));
  const markers = await watchBudgetMarkers({ redis, subscriber, logger }, { keyPrefix });
  closers.push(() => markers.close());
  return { ledger: createBudgetLedger(redis, { keyPrefix, settings, markers }), timeZone: settings.timeZone };
}

/**
 * The outbound consumer and the typing indicators (driven by the workers' turn signals). Replies of a
 * channel not run here go to its `deliverOnly` target (GatewayChannels), if it has one.
 */
async function startDelivery(deps: Started, keyPrefix: string, targets: { channels: ReadonlyMap<ChannelName, Channel>; deliverOnly: readonly Channel[] }, names: QueueNames, closers: Array<() => Promise<unknown>>, o: ResolvedGatewayOptions): Promise<void> {
  const { redis, logger, metrics } = deps;
  const { channels } = targets;
  const typing = createTypingIndicators({ log: logger });
  const liveReplies = o.liveReplies ? await startLiveReplies(deps, keyPrefix, channels, o, closers) : undefined;
  const delivered = new Map<ChannelName, Channel>([...targets.deliverOnly.map((target) => [target.name, target] as const), ...channels]);
  const delivery = createDelivery({ channels: delivered, ledger: createRedisDeliveryLedger({ redis }, { keyPrefix }), log: logger, liveReplies });
  // One consumer per outbound shard: a chat's replies all sit in its session's shard, in order.
  for (const queuePrefix of shardPrefixes(names)) {
    const consumer = createOutboundConsumer({ redis, delivery, logger, metrics }, { queuePrefix, outboundQueue: names.outboundQueue, closeTimeoutMs: OUTBOUND_CLOSE_TIMEOUT_MS });
    closers.push(() => consumer.close());
  }
  const subscriber = duplicateRedis(redis);
  subscriber.on('error', (err: Error) => logger.debug({ err }, 'turn signal connection error'));
  const unsubscribe = await TURN_SIGNALS.subscribe(subscriber, (signal) => onSignal(signal, channels, typing), keyPrefix, logger);
  closers.push(async () => {
    typing.stopAll();
    await unsubscribe();
  });
}

/** The partial replies of the workers, shown in the chats (closed after the delivery stopped). */
async function startLiveReplies(deps: Started, keyPrefix: string, channels: ReadonlyMap<ChannelName, Channel>, o: ResolvedGatewayOptions, closers: Array<() => Promise<unknown>>): Promise<GatewayLiveReplies> {
  const subscriber = duplicateRedis(deps.redis);
  subscriber.on('error', (err: Error) => deps.logger.debug({ err }, 'partial replies connection error'));
  const interval = o.liveReplyEditIntervalMs;
  const gatewayLiveReplies = await startGatewayLiveReplies({ redis: deps.redis, subscriber, channels, logger: deps.logger }, { keyPrefix, intervalMs: { telegram: interval, discord: interval } });
  closers.push(() => gatewayLiveReplies.close());
  return gatewayLiveReplies;
}

/**
 * `/readyz`: Redis answers, the queues are readable, every channel runs and is connected (what this
 * gateway's heartbeat says of it; standby counts as up), and a worker is alive (its heartbeat).
 */
function readinessChecks(redis: RedisClient, turns: Pick<ShardedQueue<TurnJobData>, 'getJobCounts'>, channels: { list: readonly Channel[]; status: ChannelsStatus }, keyPrefix: string): Record<string, () => Promise<unknown>> {
  // A connection that is not up fails at once rather than after the client's reconnect attempts.
  const connected = () => {
    if (redis.status !== 'ready') throw new Error(`redis connection ${redis.status}`);
  };
  return {
    redis: async () => {
      connected();
      return (await redis.ping()) === 'PONG';
    },
    queues: async () => {
      connected();
      return turns.getJobCounts();
    },
    channels: async () => {
      if (channels.status.state !== 'ok') throw new Error(channels.status.state);
      assertChannelsUp(channelHealthOf(channels.list, channels.status));
    },
    workers: async () => {
      connected();
      await checkLiveWorkers(redis, keyPrefix);
    },
  };
}

/** `/btw`: side questions answered by the agent's model from the session's context (src/session/side-question.ts). */
function sideQuestion(o: ResolvedGatewayOptions, deps: Parameters<typeof createLlmSideQuestion>[0]) {
  return createLlmSideQuestion(deps, {
    baseURL: o.llm.baseURL, apiKey: o.llm.apiKey, model: o.llm.model, timeoutMs: COMMAND_SUMMARY_TIMEOUT_MS, prices: o.prices,
    systemPrompt: o.systemPrompt ?? DEFAULT_SYSTEM_PROMPT, contextWindow: o.contextWindow, reservedOutputTokens: o.reservedOutputTokens,
  });
}

/** The summariser endpoint and the session figures the gateway's session operations use. */
function sessionFigures(o: ResolvedGatewayOptions) {
  return {
    baseURL: o.llm.baseURL, apiKey: o.llm.apiKey, threshold: o.threshold, hygieneThreshold: o.hygieneThreshold,
    limits: { model: o.llm.model, summaryModel: o.llm.summaryModel ?? o.llm.model, contextWindow: o.contextWindow, reservedOutputTokens: o.reservedOutputTokens },
  };
}

/** `chatgate_queue_jobs`: the turn queue's BullMQ counts and the outbound streams' counts, by state. */
async function queueDepths(turns: ShardedQueue<TurnJobData>, outbound: OutboundQueue) {
  const [turnDepths, counts] = await Promise.all([readQueueDepths(turns.shards), outbound.counts()]);
  return [...turnDepths, ...Object.entries(counts).map(([state, count]) => ({ queue: outbound.name, state, count }))];
}

/** How far the session's pending turn job is from running (at most the first 1,000 waiting jobs are looked at). */
async function turnPosition(turns: Queue, sessionId: string): Promise<TurnPosition> {
  const jobId = await turns.getDeduplicationJobId(turnDedupId(sessionId));
  const job = jobId ? await turns.getJob(jobId) : undefined;
  if (!job) return { state: 'none' };
  const state = await job.getState();
  if (state === 'active') return { state: 'running' };
  if (state !== 'waiting' && state !== 'delayed' && state !== 'prioritized') return { state: 'none' };
  const waiting = await turns.getJobs(['waiting'], 0, 999, true);
  const index = waiting.findIndex((other) => other.id === job.id);
  return { state: 'queued', ahead: index === -1 ? waiting.length : index };
}

function onSignal(signal: TurnSignal, channels: ReadonlyMap<ChannelName, Channel>, typing: TypingIndicators): void {
  const channel = channels.get(signal.channel);
  if (!channel) return;
  if (signal.type === 'turn-ended') typing.stop(signal.sessionId);
  else typing.start(signal.sessionId, channel, { chatId: signal.chatId, threadId: signal.threadId });
}
