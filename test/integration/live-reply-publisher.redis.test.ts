import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { duplicateRedis } from '../../src/redis/client.js';
import { liveRepliesChannel, sessionKeys } from '../../src/redis/keys.js';
import { LIVE_REPLY_UPDATES, type LiveReplyUpdate } from '../../src/live-reply/record.js';
import { replyJobId } from '../../src/queue/names.js';
import type { TurnProducer } from '../../src/queue/producer.js';
import { readUsage } from '../../src/redis/usage.js';
import { createTurnLiveReplies } from '../../workers/live-reply-publisher.js';
import { createSilentLogger } from '../../src/log.js';
import type { FakeOpenAI } from '../fakes/openai-server.js';
import { createLogSink } from '../helpers/log-sink.js';
import type { OutboundCollector, TestRedis } from '../helpers/redis.js';
import { openWorkerRig, type WorkerRig, type WorkerStartOptions } from '../helpers/worker-rig.js';

const SESSION = 'telegram:42';
let n = 0;

function inbound(text: string): InboundMessage {
  n++;
  return { id: `telegram:42:${n}`, channel: 'telegram', chatId: '42', chatType: 'private', userId: '42', userName: 'Ada', text, attachments: [], receivedAt: Date.now() };
}

/** Every update of one stream is a longer text of the same run, or starts a new run at seq 0. */
function expectOrdered(updates: LiveReplyUpdate[]): void {
  for (let i = 1; i < updates.length; i++) {
    const [before, now] = [updates[i - 1]!, updates[i]!];
    if (now.run === before.run) {
      expect(now.seq).toBe(before.seq + 1);
      if (now.state === 'open' && before.state === 'open') expect(now.text.startsWith(before.text)).toBe(true);
    } else {
      expect(now.seq).toBe(0);
    }
  }
}

describe('partial replies from the worker', () => {
  let rig: WorkerRig;
  let t: TestRedis;
  let fake: FakeOpenAI;
  let producer: TurnProducer;
  let out: OutboundCollector;
  let updates: LiveReplyUpdate[];
  let unsubscribe: () => Promise<void>;

  const start = (options: WorkerStartOptions = {}) => rig.start({ liveReplyPublishIntervalMs: 20, ...options });

  beforeEach(async () => {
    rig = await openWorkerRig();
    ({ t, fake, producer, out } = rig);
    updates = [];
    unsubscribe = await LIVE_REPLY_UPDATES.subscribe(duplicateRedis(t.redis), (update) => updates.push(update), t.keyPrefix);
  });
  afterEach(async () => {
    await unsubscribe();
    await rig.close();
  });

  it('publishes the reply being written, throttled and in order, under the id of the reply it becomes; usage counts as without streaming', async () => {
    const text = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');
    fake.setHandler(() => ({ content: text, pieceDelayMs: 3 }));
    await start();
    const message = inbound('hi');
    await producer.submitInbound(message);
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]).toMatchObject({ id: replyJobId([message.id], 'reply'), text, kind: 'reply' });
    const mine = updates.filter((u) => u.liveReplyId === out.replies[0]!.id);
    expect(mine.length).toBeGreaterThan(0);
    // 54 text chunks arrive; publishing at most every 20 ms sends far fewer updates.
    expect(mine.length).toBeLessThan(54);
    expect(mine[0]).toMatchObject({ sessionId: SESSION, channel: 'telegram', chatId: '42', chatType: 'private', seq: 0, state: 'open', answers: [message.id] });
    expectOrdered(mine);
    for (const update of mine) expect(text.startsWith(update.text)).toBe(true);
    expect(fake.requests[0]!.stream).toBe(true);
    const usage = await readUsage(t.redis, sessionKeys(SESSION, t.keyPrefix));
    expect(usage).toMatchObject({ calls: 1, promptTokens: fake.requests[0]!.promptTokens });
    expect(usage.completionTokens).toBeGreaterThan(0);
  });

  it('drops the text of a round that turns into tool calls; the final round streams afresh at seq 0', async () => {
    fake.setHandler((request) => request.index === 0
      ? { content: 'Let me check the time first.', toolCalls: [{ name: 'current_time', arguments: {} }], pieceDelayMs: 2 }
      // The final round is paced slower than the 20 ms publish interval: a round that ends before its
      // first publish is never shown (by design), and under load 2 ms pieces could end that soon.
      : { content: 'It is late, go to bed.', pieceDelayMs: 30 });
    await start();
    await producer.submitInbound(inbound('what time is it?'));
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]!.text).toBe('It is late, go to bed.');
    const dropped = updates.findIndex((u) => u.state === 'dropped');
    expect(dropped).toBeGreaterThan(0);
    expect(updates.slice(0, dropped).every((u) => 'Let me check the time first.'.startsWith(u.text))).toBe(true);
    const after = updates.slice(dropped + 1);
    expect(after[0]).toMatchObject({ seq: 0, state: 'open' });
    expect(after[0]!.run).not.toBe(updates[dropped]!.run);
    expect(after.every((u) => 'It is late, go to bed.'.startsWith(u.text))).toBe(true);
    expectOrdered(updates);
  });

  it('names the messages its turn answers in every update, a message that joined the turn (steer) too', async () => {
    let go: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (go = resolve));
    fake.setHandler((request) => request.index === 0
      ? { hold: held.then(() => ({ toolCalls: [{ name: 'current_time', arguments: {} }] })) }
      : { content: 'It is late; yes, by train.', pieceDelayMs: 30 });
    await start();
    const first = { ...inbound('what time is it?'), busyMode: 'steer' as const };
    await producer.submitInbound(first);
    await fake.waitForRequest((request) => request.index === 0);
    const second = { ...inbound('and by train?'), busyMode: 'steer' as const };
    await producer.submitInbound(second);
    go();
    await out.waitFor((r) => r.length === 1);
    expect(fake.requests[1]!.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['what time is it?', 'and by train?']);
    const shown = updates.filter((u) => u.state === 'open');
    expect(shown.length).toBeGreaterThan(0);
    for (const update of shown) expect(update.answers).toEqual([first.id, second.id]);
  });

  it('refuses an update that does not say which messages its turn answers (a worker of another format), with a log line', async () => {
    const sink = createLogSink();
    const seen: LiveReplyUpdate[] = [];
    const stop = await LIVE_REPLY_UPDATES.subscribe(duplicateRedis(t.redis), (update) => seen.push(update), t.keyPrefix, sink.logger);
    const update = { liveReplyId: 'reply-y-0', sessionId: SESSION, channel: 'telegram' as const, chatId: '42', run: 'r', seq: 0, text: 'Hi', state: 'open' as const, atMs: Date.now() };
    await t.redis.publish(liveRepliesChannel(t.keyPrefix), JSON.stringify(update));
    await LIVE_REPLY_UPDATES.publish(t.redis, { ...update, seq: 1, answers: ['telegram:42:y'] }, t.keyPrefix);
    while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await stop();
    expect(seen.map((u) => u.seq)).toEqual([1]);
    expect(sink.lines.filter((line) => line.msg === 'malformed live reply update ignored')).toHaveLength(1);
  });

  it('restarts the stream at seq 0 when a call dies mid-stream and is retried: the dead attempt\'s text never reaches the reply', async () => {
    fake.setHandler((request) => request.index === 0 ? { content: 'DEAD ATTEMPT TEXT that never finishes', cutAfter: 4, pieceDelayMs: 15 } : { content: 'the real answer', pieceDelayMs: 30 });
    await start();
    await producer.submitInbound(inbound('hello'));
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]!.text).toBe('the real answer');
    const runs = [...new Set(updates.map((u) => u.run))];
    expect(runs.length).toBeGreaterThanOrEqual(2);
    const lastRun = updates.filter((u) => u.run === runs.at(-1));
    expect(lastRun[0]!.seq).toBe(0);
    expect(lastRun.every((u) => !u.text.includes('DEAD'))).toBe(true);
    expectOrdered(updates);
  });

  it('publishes nothing with streaming off, and the model is then asked without streaming', async () => {
    fake.setHandler(() => ({ content: 'plain reply' }));
    await start({ liveReplies: false });
    await producer.submitInbound(inbound('hi'));
    await out.waitFor((r) => r.length === 1);
    expect(out.replies[0]!.text).toBe('plain reply');
    expect(fake.requests.map((r) => r.stream)).toEqual([false]);
    expect(updates).toEqual([]);
  });

  it('a turn stream publishes the latest text only (no backlog), and nothing after it ended', async () => {
    const stream = createTurnLiveReplies({ redis: t.redis, logger: createSilentLogger() }, { keyPrefix: t.keyPrefix, intervalMs: 30 })(
      { liveReplyId: 'reply-x-0', sessionId: SESSION, channel: 'telegram', chatId: '42' }, ['telegram:42:x'],
    );
    for (let i = 0; i < 200; i++) stream.append(`${i} `);
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (updates.some((u) => u.text.endsWith('199 '))) {
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
    await stream.end();
    stream.append('after the end');
    await stream.end();
    expect(updates.length).toBeLessThanOrEqual(2);
    expect(updates.at(-1)!.text.endsWith('199 ')).toBe(true);
    expect(updates.every((u) => !u.text.includes('after the end'))).toBe(true);
  });
});
