/**
 * The API channel when not every gateway has `CHATGATE_API_KEYS` (a rolling restart turning it on):
 * gateway A runs the API, gateway B does not, and B delivers the reply of a request waiting on A.
 * A's outbound consumer is kept full (every slot holds a Telegram send that never returns), so B is
 * the one consumer left to take the reply; the answer still reaches A's request, over the relay.
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Channel } from '../../channels/channel.js';
import type { OutboundMessage } from '../../src/core/inbound.js';
import { createChannels } from '../../src/gateway/channels.js';
import type { GatewayHandle } from '../../src/gateway/index.js';
import { createSilentLogger } from '../../src/log.js';
import { enqueueOutbound, openOutboundQueue, type OutboundQueue } from '../../src/outbound/outbound-queue.js';
import { sessionShardPrefix } from '../../src/queue/names.js';
import { duplicateRedis } from '../../src/redis/client.js';
import { apiRepliesChannel } from '../../src/redis/keys.js';
import { apiClientOf, ask, startSecondGateway } from '../helpers/api-client.js';
import { startStack, type Stack } from '../helpers/stack.js';

const KEY = 'sk-relay-0123456789abcdef';
/** Replies a gateway delivers at once per outbound shard (the outbound consumer's default concurrency). */
const OUTBOUND_CONCURRENCY = 8;
/** The session of the test's request (`api:<user>:<session name>`). */
const SESSION = 'relay1';

/** A Telegram channel whose sends never return until released: it keeps the outbound slots of gateway A busy. */
function holdingTelegram(): Channel & { held: number; events: EventEmitter; release(): void } {
  const events = new EventEmitter();
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const channel = {
    name: 'telegram' as const, maxMessageLength: 4096, lengthUnit: 'utf16' as const, formatting: 'plain' as const, typingIntervalMs: 60_000,
    held: 0, events, release,
    start: async () => undefined,
    stop: async () => undefined,
    sendTyping: async () => undefined,
    async send() {
      channel.held++;
      events.emit('held');
      await released;
      return { messageId: String(channel.held) };
    },
  };
  return channel;
}

let stack: Stack;
let telegram: ReturnType<typeof holdingTelegram>;
/** Gateway B, without the API channel. */
let other: GatewayHandle | undefined;
let outbound: OutboundQueue;

beforeEach(async () => {
  telegram = holdingTelegram();
  // Gateway A (the stack's): the API channel, and the Telegram channel that holds its sends.
  stack = await startStack({
    handler: (request) => ({ content: String(request.messages.at(-1)!.content).replace(/^say /, '') }),
    env: { CHATGATE_API_KEYS: `${KEY}=alice`, CHATGATE_RATE_LIMIT_PER_MINUTE: '1000' },
    channels: async (t) => {
      const built = await createChannels({ logger: createSilentLogger(), redis: t.redis }, { api: { keys: [{ key: KEY, user: 'alice' }] }, host: '127.0.0.1', keyPrefix: t.keyPrefix });
      return { ...built, list: [...built.list, telegram] };
    },
  });
  outbound = openOutboundQueue(stack.t.redis, { ...stack.t.names, outboundQueue: 'outbound' });
});

afterEach(async () => {
  telegram.release();
  await other?.close();
  other = undefined;
  await stack.close();
});

describe('the API channel when another gateway has no API keys', () => {
  it('answers a request on the gateway with the API when the gateway without it delivers the reply', async () => {
    // A alone takes these: its consumer of the request's shard is then full.
    const shard = sessionShardPrefix(stack.t.names, `api:alice:${SESSION}`);
    const chats = Array.from({ length: 1000 }, (_, i) => `held-${i}`).filter((chatId) => sessionShardPrefix(stack.t.names, `telegram:${chatId}`) === shard).slice(0, OUTBOUND_CONCURRENCY);
    for (const chatId of chats) {
      const reply: OutboundMessage = { id: `reply-${chatId}`, sessionId: `telegram:${chatId}`, channel: 'telegram', chatId, text: 'held', kind: 'reply' };
      await enqueueOutbound(outbound, reply);
    }
    while (telegram.held < OUTBOUND_CONCURRENCY) await EventEmitter.once(telegram.events, 'held');
    // B: the same configuration without the API keys.
    other = await startSecondGateway(stack, { ...stack.config, access: { ...stack.config.access, apiKeys: undefined } });
    const relayed: string[] = [];
    const subscriber = duplicateRedis(stack.t.redis);
    try {
      await subscriber.subscribe(apiRepliesChannel(stack.t.keyPrefix));
      subscriber.on('message', (_channel: string, message: string) => relayed.push(message));
      const answer = ask(apiClientOf(stack.gateway, KEY), SESSION, 'say hello from afar');
      // A request left waiting when the test fails is cancelled as the gateway closes.
      answer.catch(() => undefined);
      // On failure the reply fails for good at once: end the test then, not at the request's 504.
      let answered = false;
      const failed = (async () => {
        for (;;) {
          const reasons = (await outbound.failed()).map((reply) => reply.reason);
          if (answered || reasons.length > 0) return reasons;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      const settled = await Promise.race([answer.then((completion) => ({ completion })), failed.then((reasons) => ({ reasons }))]);
      answered = true;
      await failed;
      expect('reasons' in settled ? settled.reasons : []).toEqual([]);
      expect((await answer).choices[0]!.message.content).toBe('hello from afar');
      // B delivered it: the answer went over the relay (A's own delivery hands it to its request directly).
      expect(relayed.map((message) => (JSON.parse(message) as { text: string }).text)).toEqual(['hello from afar']);
      expect(telegram.held).toBe(OUTBOUND_CONCURRENCY);
    } finally {
      await subscriber.quit();
    }
  });
});
