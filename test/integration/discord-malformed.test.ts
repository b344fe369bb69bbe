import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDiscordChannel, type DiscordChannel } from '../../channels/discord/index.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { FAKE_DISCORD_IDS as IDS, startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';
import { createLogSink } from '../helpers/log-sink.js';

let fake: FakeDiscordServer;
let channel: DiscordChannel | undefined;
const rejections: unknown[] = [];
const onRejection = (reason: unknown): void => void rejections.push(reason);

beforeEach(async () => {
  rejections.length = 0;
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onRejection);
  fake = await startFakeDiscord({ heartbeatIntervalMs: 200 });
});

afterEach(async () => {
  process.off('unhandledRejection', onRejection);
  process.off('uncaughtException', onRejection);
  await channel?.stop();
  channel = undefined;
  await fake.close();
});

describe('discord channel: malformed gateway payloads', () => {
  it('drops a MESSAGE_CREATE whose mentions is not an array, or whose data is null, logs its type once, counts each, and keeps answering', async () => {
    const sink = createLogSink();
    const dropped: string[] = [];
    const received: InboundMessage[] = [];
    let wake: () => void = () => undefined;
    channel = createDiscordChannel({ log: sink.logger, onDroppedPayload: (event) => dropped.push(event) }, { token: fake.token, apiRoot: fake.apiRoot, readyTimeoutMs: 10_000 });
    await channel.start(async (message) => {
      received.push(message);
      wake();
    });
    fake.dispatchMessage({ where: 'dm', content: 'bad mentions', override: { mentions: 'everyone' } });
    fake.dispatchRaw('MESSAGE_CREATE', null);
    fake.dispatchMessage({ where: 'guild', content: 'bad mentions again', override: { mentions: { 0: 'x' } } });
    const arrived = new Promise<void>((resolve) => { wake = resolve; });
    fake.dispatchMessage({ where: 'dm', content: 'hello after the bad ones' });
    await arrived;

    expect(received.map((m) => m.text)).toEqual(['hello after the bad ones']);
    // The good message is answered through the same client.
    await channel.send({ chatId: IDS.dmChannel }, { text: 'hi', mode: 'plain' });
    expect(fake.callsOf('POST', new RegExp(`^/channels/${IDS.dmChannel}/messages$`))).toHaveLength(1);
    expect(dropped).toEqual(['MESSAGE_CREATE', 'MESSAGE_CREATE', 'MESSAGE_CREATE']);
    const logged = sink.lines.filter((line) => line.msg === 'discord gateway payload dropped');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ event: 'MESSAGE_CREATE', level: 40 });
    expect(rejections).toEqual([]);
  });
});
