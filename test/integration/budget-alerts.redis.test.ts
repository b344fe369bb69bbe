/**
 * Budget events: a near-limit and an exhausted event, each said once per limit and period, logged
 * at warn, counted (channel and model only) and POSTed to the webhook, which is retried and never
 * holds the call that brought the event.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBudgetAlerts } from '../../src/budget/alerts.js';
import { createBudgetGuard } from '../../src/budget/guard.js';
import { NO_BUDGETS, type BudgetSettings, type TurnSpend } from '../../src/core/budget.js';
import { BudgetError } from '../../src/errors.js';
import { createLlmClient } from '../../src/llm/client.js';
import { createMemoryMetrics } from '../../src/metrics.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { createLogSink } from '../helpers/log-sink.js';
import { pollUntil } from '../helpers/waits.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const MODEL = 'fake-model';
const scope = { user: 'telegram:42', chat: 'telegram:42' };

/** A webhook receiver: each POST is kept and answered by `answer(attempt)`, or held until `release()`. */
interface Receiver {
  url: string;
  bodies: unknown[];
  held: number;
  release(): void;
  close(): Promise<void>;
}

async function startReceiver(answer: (attempt: number) => number | 'hold'): Promise<Receiver> {
  const holds: Array<() => void> = [];
  const receiver = { bodies: [] as unknown[], held: 0 } as Receiver;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (chunk: Buffer) => { body += chunk.toString(); });
    req.on('end', () => {
      receiver.bodies.push(JSON.parse(body));
      const status = answer(receiver.bodies.length);
      if (status !== 'hold') return void res.writeHead(status).end();
      receiver.held++;
      holds.push(() => res.writeHead(503).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/budget?token=s3cret`;
  receiver.release = () => { for (const done of holds.splice(0)) done(); };
  receiver.close = () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
  return receiver;
}

describe('budget events', () => {
  let t: TestRedis;
  let fake: FakeOpenAI;
  let receiver: Receiver | undefined;
  beforeEach(async () => {
    t = createTestRedis();
    fake = await startFakeOpenAI(() => ({ content: 'ok', usage: { prompt_tokens: 350, completion_tokens: 50 } }));
  });
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
    await fake.close();
    await t.cleanup();
  });

  const start = (webhookUrl: string, attempts = 5, retryBaseMs = 1) => {
    const log = createLogSink('info');
    const metrics = createMemoryMetrics();
    const settings: BudgetSettings = { ...NO_BUDGETS, user: { day: { tokens: 1000 } }, alertWebhookUrl: webhookUrl };
    const guard = createBudgetGuard({ redis: t.redis, logger: log.logger, metrics }, { keyPrefix: t.keyPrefix, settings, defaultMaxTokens: 50, alerts: { retryBaseMs, attempts } })!;
    const llm = guard.llm(createLlmClient({ baseURL: fake.baseURL, apiKey: 'k', model: MODEL, stream: false, retry: { maxRetries: 0 } }));
    const notices: string[] = [];
    const turn: TurnSpend = { usedMicro: 0, usedTokens: 0, onNotice: (text) => notices.push(text) };
    // As a turn does before it commits: the call's settle (and its events) landed.
    const call = async () => {
      const result = await llm.complete({ messages: [{ role: 'user', content: 'hi' }], scope: { ...scope, turn } });
      await turn.settling;
      return result;
    };
    return { log, metrics, guard, call, notices };
  };

  it('posts each event once, retrying a failing webhook, without holding the call; logs and counts it once', async () => {
    receiver = await startReceiver((attempt) => (attempt === 1 ? 'hold' : attempt === 2 ? 500 : 204));
    const { log, metrics, guard, call, notices } = start(receiver.url);
    await call(); // 400 tokens
    await call(); // 800: the notice share
    // That call has come back, and its event's first POST is still unanswered: the webhook never holds a call.
    await pollUntil(() => receiver!.held === 1);
    receiver.release();
    await call(); // 1,200: used up
    await expect(call()).rejects.toBeInstanceOf(BudgetError);
    await guard.alerts.idle();
    const types = receiver.bodies.map((b) => (b as { type: string }).type);
    expect(types.filter((type) => type === 'budget.near')).toHaveLength(3); // held (503), 500, delivered
    expect(types.filter((type) => type === 'budget.exhausted')).toHaveLength(1);
    expect(receiver.bodies.find((b) => (b as { type: string }).type === 'budget.exhausted')).toMatchObject({ version: 1, level: 'user', subject: 'telegram:42', period: 'day', unit: 'tokens', limit: 1000, model: MODEL, channel: 'telegram', resetsAt: expect.stringMatching(/T00:00:00\.000Z$/) });
    expect(log.lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual(['budget near its limit', 'budget used up']);
    expect(log.lines.find((l) => l.msg === 'budget used up')).toMatchObject({ budgetLevel: 'user', subject: 'telegram:42', period: 'day', unit: 'tokens', limit: 1000 });
    expect(metrics.events.filter((e) => e.type === 'budget_event')).toEqual([
      { type: 'budget_event', kind: 'near', channel: 'telegram', model: MODEL },
      { type: 'budget_event', kind: 'exhausted', channel: 'telegram', model: MODEL },
    ]);
    // After the reply of each call that brought it, one line: the real share, then used up (the refusal is the BudgetError's).
    expect(notices).toEqual([
      expect.stringMatching(/^You have used 80% of today's budget of 1,000 tokens: 200 tokens are left\. It resets at 00:00 UTC, in /),
      expect.stringMatching(/^You have used today's budget of 1,000 tokens\. It resets at 00:00 UTC, in /),
    ]);
    expect(fake.requests).toHaveLength(3);
  });

  it('says "too low for another call", not "used up", of a limit whose room no call fits in; the body carries `used`', async () => {
    receiver = await startReceiver(() => 204);
    const log = createLogSink('info');
    const alerts = createBudgetAlerts({ logger: log.logger }, { webhookUrl: receiver.url, retryBaseMs: 1 });
    const event = { kind: 'exhausted' as const, level: 'user' as const, subject: 'telegram:42', period: 'day' as const, unit: 'tokens' as const, limit: 1000, model: MODEL, channel: 'telegram', atMs: Date.UTC(2026, 11, 2) };
    alerts.emit({ ...event, used: 990 });
    alerts.emit({ ...event, used: 1010 });
    await alerts.idle();
    expect(log.lines.filter((l) => l.level === 40).map((l) => [l.msg, l.used])).toEqual([['budget too low for another call', 990], ['budget used up', 1010]]);
    // Two POSTs under way at once: either may land first.
    expect(receiver.bodies).toHaveLength(2);
    expect(receiver.bodies).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'budget.exhausted', limit: 1000, used: 990 }), expect.objectContaining({ type: 'budget.exhausted', limit: 1000, used: 1010 })]));
  });

  it('gives up after its attempts with one warning that names the origin, not the URL\'s secret', async () => {
    receiver = await startReceiver(() => 503);
    const { log, guard, call } = start(receiver.url, 3);
    await call();
    await call();
    await guard.alerts.idle();
    expect(receiver.bodies).toHaveLength(3);
    const failures = log.lines.filter((l) => l.msg === 'budget alert not delivered to the webhook');
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ level: 40, reason: 'HTTP 503', webhook: new URL(receiver.url).origin, subject: 'telegram:42' });
    expect(JSON.stringify(log.lines)).not.toContain('s3cret');
  });

  it('at shutdown, names the alerts still being retried that were not delivered', async () => {
    receiver = await startReceiver(() => 503);
    const { log, guard, call } = start(receiver.url, 5, 60_000);
    await call();
    await call(); // the notice share: its POST failed once and waits a minute to try again
    await pollUntil(() => receiver!.bodies.length === 1);
    await guard.alerts.close(10);
    expect(log.lines.filter((l) => l.msg.startsWith('budget alerts not delivered'))).toEqual([
      expect.objectContaining({ level: 40, undelivered: 1, subjects: ['user:telegram:42'], kinds: ['near'] }),
    ]);
  });
});
