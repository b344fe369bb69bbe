import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TURN_SIGNALS, type TurnSignal } from '../../src/queue/signals.js';
import { turnSignalChannel } from '../../src/redis/keys.js';
import { createLogSink } from '../helpers/log-sink.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

describe('turn signals', () => {
  let t: TestRedis;
  beforeEach(() => { t = createTestRedis(); });
  afterEach(async () => { await t.cleanup(); });

  it('logs and skips malformed payloads and a throwing handler, and keeps delivering', async () => {
    const sink = createLogSink();
    const received: TurnSignal[] = [];
    let done = (): void => undefined;
    const last = new Promise<void>((resolve) => { done = resolve; });
    const unsubscribe = await TURN_SIGNALS.subscribe(t.redis.duplicate(), (signal) => {
      received.push(signal);
      if (signal.chatId === 'boom') throw new Error('handler bug');
      if (signal.chatId === 'last') done();
    }, t.keyPrefix, sink.logger);
    const channel = turnSignalChannel(t.keyPrefix);
    const signal = (chatId: string): TurnSignal => ({ type: 'typing', sessionId: `web:${chatId}`, channel: 'web', chatId, atMs: 1 });
    await t.redis.publish(channel, 'not json {');
    await t.redis.publish(channel, JSON.stringify({ type: 'typing' }));
    await t.redis.publish(channel, 'null');
    await TURN_SIGNALS.publish(t.redis, signal('boom'), t.keyPrefix);
    await TURN_SIGNALS.publish(t.redis, signal('last'), t.keyPrefix);
    await last;
    await unsubscribe();
    expect(received.map((s) => s.chatId)).toEqual(['boom', 'last']);
    expect(sink.lines.filter((line) => line.msg === 'malformed turn signal ignored')).toHaveLength(3);
    expect(sink.lines.find((line) => line.msg === 'turn signal handler failed')).toMatchObject({ sessionId: 'web:boom', err: { message: 'handler bug' } });
  });
});
