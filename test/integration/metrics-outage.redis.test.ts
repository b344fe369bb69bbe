/**
 * Failures show in Prometheus: a model outage (the fake OpenAI answering 500, then not answering
 * until the client times out) and a rate-limited delivery are counted at the gateway's `/metrics`,
 * which the in-process worker records into (one metrics instance per process, as `chatgate start`).
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Channel, ChatTarget, InboundHandler, OutgoingText } from '../../channels/channel.js';
import { gatewayOptions } from '../../src/cli/compose.js';
import { loadConfig } from '../../src/config.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { ChannelError } from '../../src/errors.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import { createSilentLogger } from '../../src/log.js';
import { createPrometheusMetrics, MemorySessionView } from '../../src/monitor/index.js';
import { runWorker, type RunningWorker } from '../../workers/main.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { waitUntil } from '../helpers/waits.js';

/** A web channel that records what it sends (and can refuse the next sends as rate-limited). */
function recordingChannel(): Channel & { sent: string[]; events: EventEmitter; rateLimitNext: number } {
  const events = new EventEmitter();
  const channel = {
    name: 'web' as const, maxMessageLength: 4000, lengthUnit: 'utf16' as const, formatting: 'plain' as const, typingIntervalMs: 60_000,
    sent: [] as string[], events, rateLimitNext: 0,
    async start(_onMessage: InboundHandler) {},
    async stop() {},
    async send(_target: ChatTarget, message: OutgoingText) {
      if (channel.rateLimitNext > 0) {
        channel.rateLimitNext--;
        events.emit('sent');
        throw new ChannelError('send failed for web:c (429: Too Many Requests, retry after 0.05 s)', { retryable: true, retryAfterMs: 50, code: 'CHANNEL_RATE_LIMITED' });
      }
      channel.sent.push(message.text);
      events.emit('sent');
      return { messageId: String(channel.sent.length) };
    },
    async sendTyping() {},
  };
  return channel;
}

/** `name{labels}` → value of the gateway's `/metrics`. */
async function scrape(gateway: GatewayHandle): Promise<Map<string, number>> {
  const text = await (await fetch(`${gateway.httpUrl}/metrics`)).text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^(chatgate_\w+)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (match) samples.set(`${match[1]}${match[2] ?? ''}`, Number(match[3]));
  }
  return samples;
}

describe('metrics of failures', () => {
  let t: TestRedis;
  let llm: FakeOpenAI;
  let channel: ReturnType<typeof recordingChannel>;
  let gateway: GatewayHandle;
  let worker: RunningWorker;
  let release: () => void = () => undefined;
  let n = 0;
  const say = (text: string) => gateway.ingest.handle({
    id: `web:c:${++n}`, channel: 'web', chatId: 'c', userId: 'u', userName: 'U', text, attachments: [], receivedAt: Date.now(),
  } satisfies InboundMessage);

  beforeEach(async () => {
    t = createTestRedis();
    llm = await startFakeOpenAI();
    channel = recordingChannel();
    const config = loadConfig({
      REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'k',
      CHATGATE_MODEL: 'gpt-4o-mini', CHATGATE_HTTP_PORT: '0', CHATGATE_RATE_LIMIT_PER_MINUTE: '0',
    });
    const logger = createSilentLogger();
    const metrics = createPrometheusMetrics({ build: { version: 'test' } });
    gateway = await startGateway({ redis: t.redis, logger, metrics, sessions: new MemorySessionView(), channels: { list: [channel] } }, gatewayOptions(config));
    worker = await runWorker({ redis: t.redis, logger, metrics }, {
      keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, contextWindow: 16_000, concurrency: 1, leaseRetryMs: 50,
      llm: { baseURL: llm.baseURL, apiKey: 'k', model: 'gpt-4o-mini', timeoutMs: 1500, retry: { maxRetries: 0 } },
    });
  });

  afterEach(async () => {
    release();
    await worker.close();
    await gateway.close();
    await llm.close();
    await t.cleanup();
  });

  it('counts model calls that failed, by outcome, beside the ones answered', async () => {
    llm.setHandler(() => ({ status: 500, message: 'upstream down' }));
    await say('first');
    await waitUntil(channel.events, 'sent', () => channel.sent.length >= 1);
    const held = new Promise<{ content: string }>((resolve) => (release = () => resolve({ content: 'too late' })));
    llm.setHandler(() => ({ hold: held }));
    await say('second');
    await waitUntil(channel.events, 'sent', () => channel.sent.length >= 2);
    llm.setHandler(() => ({ content: 'back again' }));
    await say('third');
    await waitUntil(channel.events, 'sent', () => channel.sent.includes('back again'));

    const samples = await scrape(gateway);
    expect(samples.get('chatgate_model_calls_total{channel="web",outcome="transient"}')).toBe(1);
    expect(samples.get('chatgate_model_calls_total{channel="web",outcome="connection"}')).toBe(1);
    expect(samples.get('chatgate_model_calls_total{channel="web",outcome="ok"}')).toBe(1);
    expect(samples.get('chatgate_turn_duration_seconds_count{channel="web",outcome="ok"}')).toBe(3);
    expect(samples.get('chatgate_cost_usd_total{channel="web"}')).toBeGreaterThan(0);
    expect(samples.get('chatgate_build_info{version="test",node_version="' + process.version + '"}')).toBe(1);
    for (const key of samples.keys()) expect(key).not.toContain('web:c');
  });

  it('counts a rate-limited delivery as rate_limited, and the reply still arrives', async () => {
    llm.setHandler(() => ({ content: 'hello' }));
    channel.rateLimitNext = 1;
    await say('hi');
    await waitUntil(channel.events, 'sent', () => channel.sent.includes('hello'));
    const samples = await scrape(gateway);
    expect(samples.get('chatgate_delivery_failures_total{channel="web",reason="rate_limited"}')).toBe(1);
  });
});
