/**
 * A gateway SIGKILLed while a reply is being sent (the Telegram request held until the kill),
 * restarted: that reply is sent again soon after the restart, and the session's later replies —
 * produced while the gateway was down — follow it, in order, each once.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { OutboundMessage } from '../../src/core/inbound.js';
import { enqueueOutbound, openOutboundQueue, type OutboundQueue } from '../../src/outbound/outbound-queue.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { spawnChatgate, startHoldingFront, stopChatgate, type ChatgateProcess } from '../helpers/cli-process.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';
import { waitUntil } from '../helpers/waits.js';

describe('gateway killed during a delivery', () => {
  let t: TestRedis;
  let telegram: FakeTelegramServer;
  let gateway: ChatgateProcess | undefined;
  let outbound: OutboundQueue;

  beforeEach(async () => {
    t = createTestRedis();
    telegram = await startFakeTelegram();
    outbound = openOutboundQueue(t.redis, { ...t.names, outboundQueue: 'outbound' });
  });
  afterEach(async () => {
    await stopChatgate(gateway);
    await telegram.close();
    await t.cleanup();
  });

  const startGatewayProcess = async (apiRoot: string): Promise<ChatgateProcess> => {
    const proc = spawnChatgate(['gateway', '--demo'], {
      ...t.env, CHATGATE_HTTP_PORT: '0',
      TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_ROOT: apiRoot, CHATGATE_LOG_LEVEL: 'info',
    });
    await proc.ready();
    return proc;
  };
  const reply = (n: number): OutboundMessage => ({ id: `reply-${n}`, sessionId: 'telegram:42', channel: 'telegram', chatId: '42', text: `reply number ${n}`, kind: 'reply' });
  const sentTexts = () => telegram.callsOf('sendMessage').map((call) => String(call.params.text));

  it('delivers the interrupted reply first after the restart, then the later ones, each once', async () => {
    const front = await startHoldingFront(telegram.apiRoot, (path, body) => path.endsWith('/sendMessage') && body.includes('reply number 1'));
    try {
      gateway = await startGatewayProcess(front.url);
      await enqueueOutbound(outbound, reply(1));
      await front.held;
      gateway.child.kill('SIGKILL');
      await gateway.exited;
      // The worker answered twice more while the gateway was down.
      await enqueueOutbound(outbound, reply(2));
      await enqueueOutbound(outbound, reply(3));
    } finally {
      await front.close();
    }

    gateway = await startGatewayProcess(telegram.apiRoot);
    await waitUntil(telegram, 'call', () => sentTexts().filter((text) => text.startsWith('reply number')).length >= 3);
    expect(sentTexts().filter((text) => text.startsWith('reply number'))).toEqual(['reply number 1', 'reply number 2', 'reply number 3']);
    // Every reply settled (the dead gateway's claim was taken over), none failed; re-adding the first is a no-op.
    await vi.waitFor(async () => expect(await outbound.counts()).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0 }), { timeout: 10_000, interval: 100 });
    expect(await outbound.add(reply(1))).toBe(false);
  });
});
