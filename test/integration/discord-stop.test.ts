import { describe, expect, it } from 'vitest';
import { createDiscordChannel, type DiscordChannel } from '../../channels/discord/index.js';
import type { InboundMessage } from '../../src/core/inbound.js';
import { FAKE_DISCORD_IDS as IDS, startFakeDiscord } from '../fakes/discord-server.js';
import { useFakeServer } from '../helpers/fake-fixture.js';
import { gate } from '../helpers/waits.js';

let channel: DiscordChannel | undefined;
const fake = useFakeServer(() => startFakeDiscord({ heartbeatIntervalMs: 200 }), async () => {
  await channel?.stop();
  channel = undefined;
});


describe('discord channel: stop', () => {
  it('waits for the messages queued behind a slow handler before destroying the client', async () => {
    const received: string[] = [];
    const held = gate();
    const firstStarted = gate();
    const markerSeen = gate();
    channel = createDiscordChannel({}, { token: fake().token, apiRoot: fake().apiRoot });
    await channel.start(async (message: InboundMessage) => {
      if (message.text === 'marker') return markerSeen.open();
      if (message.text === 'one') {
        firstStarted.open();
        await held.promise;
      }
      received.push(message.text);
    });
    fake().dispatchMessage({ where: 'dm', content: 'one' });
    fake().dispatchMessage({ where: 'dm', content: 'two' });
    fake().dispatchMessage({ where: 'dm', content: 'three' });
    // Another channel's chain: once its message is handled, 'two' and 'three' are queued behind 'one'.
    fake().dispatchMessage({ where: 'guild', content: `<@${IDS.bot}> marker`, mentions: [IDS.bot] });
    await Promise.all([firstStarted.promise, markerSeen.promise]);
    const stopped = channel.stop();
    held.open();
    await stopped;
    channel = undefined;
    expect(received).toEqual(['one', 'two', 'three']);
  });

  it('gives up after stopDrainTimeoutMs when a handler never returns', async () => {
    const started = gate();
    channel = createDiscordChannel({}, { token: fake().token, apiRoot: fake().apiRoot, stopDrainTimeoutMs: 50 });
    await channel.start(() => {
      started.open();
      return new Promise<void>(() => undefined);
    });
    fake().dispatchMessage({ where: 'dm', content: 'stuck' });
    await started.promise;
    await channel.stop();
    channel = undefined;
  });
});
