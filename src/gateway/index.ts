import { serve, type ServerType } from '@hono/node-server';
import { Queue } from 'bullmq';
import { Hono } from 'hono';
import type { Redis } from 'ioredis';
import type { Channel } from '../../channels/channel.js';
import type { Config } from '../config.js';
import type { ChannelName, InboundMessage, OutboundMessage } from '../core/inbound.js';
import type { Logger } from '../log.js';
import { createMonitorApp } from '../monitor/app.js';
import type { SessionReader } from '../monitor/session-reader.js';
import { resolveQueueNames } from '../queue/names.js';
import { createTurnProducer } from '../queue/producer.js';
import { subscribeTurnSignals, type TurnSignal } from '../queue/signals.js';
import { createSessionStore } from '../redis/session-store.js';
import { createChannels, type GatewayChannels } from './channels.js';
import { createDelivery } from './delivery.js';
import { createRedisDeliveryLedger } from './delivery-ledger.js';
import { createIngest, type Ingest } from './ingest.js';
import { createOutboundConsumer } from './outbound.js';
import { createSessionOpsFromConfig } from '../session/session-ops.js';
import { createTypingIndicators, type TypingIndicators } from './typing.js';

/** A running gateway: channels, ingest, hygiene, delivery, and the HTTP server (monitor + web chat). */
export interface GatewayHandle {
  /** Base URL of the HTTP server, e.g. `http://127.0.0.1:8787`. */
  httpUrl: string;
  /** URL of the web chat page, when the web channel runs. */
  webChatUrl?: string;
  /** The ingest pipeline (tests and embedders may feed it directly). */
  ingest: Ingest;
  /** Stops the channels, drains deliveries, closes the server and the connections it opened. */
  close(): Promise<void>;
}

/** Dependencies of {@link startGateway}. */
export interface GatewayDeps {
  config: Config;
  /** A connection with `maxRetriesPerRequest: null` (BullMQ). */
  redis: Redis;
  logger: Logger;
  /** What the monitor's sessions API and dashboard read. */
  sessions: SessionReader;
  /** Channels to run instead of the ones built from the configuration (tests, embedders). */
  channels?: GatewayChannels;
  systemPrompt?: string;
}

/** Lease TTL while the gateway compacts a session (hygiene, /compact), ms. */
const GATEWAY_LEASE_TTL_MS = 120_000;

/** Starts the gateway: the HTTP server first, then the channels, so nothing arrives before it can be handled. */
export async function startGateway(deps: GatewayDeps): Promise<GatewayHandle> {
  const { config, redis } = deps;
  const log = deps.logger.child({ component: 'gateway' });
  const names = resolveQueueNames({ queuePrefix: config.redis.queuePrefix });
  const keyPrefix = config.redis.keyPrefix;
  const store = createSessionStore({ redis, logger: deps.logger }, { keyPrefix, transcriptRetention: config.transcriptMaxLen });
  const producer = createTurnProducer({ redis }, { ...names, keyPrefix, groupMode: config.groupMode });
  const outbound = new Queue<OutboundMessage>(names.outboundQueue, { connection: redis, prefix: names.queuePrefix });
  const turns = new Queue(names.turnQueue, { connection: redis, prefix: names.queuePrefix });
  const ops = createSessionOpsFromConfig({ redis, logger: deps.logger, store }, config, { leaseTtlMs: GATEWAY_LEASE_TTL_MS, systemPrompt: deps.systemPrompt });
  const ingest = createIngest({
    redis, producer, ops, outbound, logger: deps.logger,
    commands: { redis, store, waitingTurns: () => turns.getWaitingCount() },
  }, {
    keyPrefix, allow: config.access.allow, rateLimitPerMinute: config.access.rateLimitPerMinute,
    maxMessageChars: config.access.maxMessageChars, groupMode: config.groupMode,
    command: {
      model: config.llm.model, contextWindow: config.llm.contextWindow, reservedOutputTokens: config.compaction.reservedOutputTokens,
      threshold: config.compaction.threshold, hygieneThreshold: config.compaction.hygieneThreshold,
    },
  });
  const gatewayChannels = deps.channels ?? createChannels(config, deps.logger);
  const channelMap = new Map<ChannelName, Channel>(gatewayChannels.list.map((c) => [c.name, c]));
  const typing = createTypingIndicators({ log: deps.logger });
  const delivery = createDelivery({ channels: channelMap, ledger: createRedisDeliveryLedger({ redis }, { keyPrefix }), log: deps.logger });
  const consumer = createOutboundConsumer({ redis, delivery, logger: deps.logger }, { queuePrefix: names.queuePrefix, outboundQueue: names.outboundQueue });
  consumer.on('error', (err) => log.error({ err }, 'outbound consumer error'));
  const unsubscribe = await subscribeTurnSignals(redis.duplicate(), (signal) => onSignal(signal, channelMap, typing), keyPrefix);

  const app = new Hono();
  gatewayChannels.mount?.(app);
  app.route('/', createMonitorApp({
    sessions: deps.sessions, queues: [turns, outbound], logger: deps.logger,
    checks: { redis: async () => (await redis.ping()) === 'PONG', queues: () => turns.getJobCounts() },
  }, { host: config.http.host, monitorToken: config.http.monitorToken }));
  const { server, httpUrl } = await listen(app, config.http.host, config.http.port);
  const handle = (message: InboundMessage) => ingest.handle(message).then(() => undefined);
  for (const channel of gatewayChannels.list) await channel.start(handle);
  const webChatUrl = channelMap.has('web') ? `${httpUrl}/chat` : undefined;
  log.info({ httpUrl, webChatUrl, channels: [...channelMap.keys()] }, 'gateway started');
  return {
    httpUrl, webChatUrl, ingest,
    async close() {
      for (const channel of gatewayChannels.list) await channel.stop().catch((err: unknown) => log.warn({ err, channel: channel.name }, 'channel stop failed'));
      typing.stopAll();
      await consumer.close();
      await unsubscribe().catch(() => undefined);
      await Promise.all([outbound.close(), turns.close(), producer.close()]);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      log.info({}, 'gateway stopped');
    },
  };
}

function onSignal(signal: TurnSignal, channels: ReadonlyMap<ChannelName, Channel>, typing: TypingIndicators): void {
  const channel = channels.get(signal.channel);
  if (!channel) return;
  if (signal.type === 'turn-ended') typing.stop(signal.sessionId);
  else typing.start(signal.sessionId, channel, { chatId: signal.chatId, threadId: signal.threadId });
}

async function listen(app: Hono, host: string, port: number): Promise<{ server: ServerType; httpUrl: string }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: host, port }, (info) => {
      const shownHost = info.address.includes(':') ? `[${info.address}]` : info.address;
      resolve({ server, httpUrl: `http://${shownHost}:${info.port}` });
    });
    server.once('error', (err) => reject(new Error(`the HTTP server could not listen on ${host}:${port} (${err.message}); set CHATGATE_HTTP_PORT to a free port`)));
  });
}
