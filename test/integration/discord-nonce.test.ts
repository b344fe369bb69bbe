/**
 * A reply chunk sent again to Discord after a gateway crash (the send reached Discord, the ledger
 * write did not happen) is not posted twice: each chunk carries a nonce made from its delivery id
 * with `enforce_nonce`, and Discord answers a repeat with the message already created. The fake
 * server keeps nonces like Discord and refuses one over 25 characters.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDiscordChannel, type DiscordChannel } from '../../channels/discord/index.js';
import { discordNonce } from '../../channels/discord/send.js';
import type { Channel } from '../../channels/channel.js';
import type { ChannelName, OutboundMessage } from '../../src/core/inbound.js';
import { createDelivery } from '../../src/outbound/delivery.js';
import { createMemoryDeliveryLedger } from '../../src/outbound/delivery-ledger.js';
import { FAKE_DISCORD_IDS, startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';

describe('Discord sends are idempotent per chunk', () => {
  let fake: FakeDiscordServer;
  let channel: DiscordChannel;

  beforeEach(async () => {
    fake = await startFakeDiscord();
    channel = createDiscordChannel({}, { token: fake.token, apiRoot: fake.apiRoot, readyTimeoutMs: 10_000 });
  });
  afterEach(async () => {
    await channel.stop();
    await fake.close();
  });

  it('a reply delivered again with an empty ledger (a crash after the send) creates no second message', async () => {
    const channels = new Map<ChannelName, Channel>([['discord', channel]]);
    const reply: OutboundMessage = { id: 'reply-0123456789abcdef01234567-0', sessionId: `discord:${FAKE_DISCORD_IDS.dmChannel}`, channel: 'discord', chatId: FAKE_DISCORD_IDS.dmChannel, text: `${'A long answer. '.repeat(200)}`, kind: 'reply' };
    const first = await createDelivery({ channels, ledger: createMemoryDeliveryLedger() }).deliver(reply);
    expect(first.chunks).toBeGreaterThan(1);
    const again = await createDelivery({ channels, ledger: createMemoryDeliveryLedger() }).deliver(reply);
    expect(again.messageIds).toEqual(first.messageIds);
    expect(fake.messages.size).toBe(first.chunks);
    expect(fake.nonceRepeats).toBe(first.chunks);
  });

  it('different chunks get different nonces of at most 25 characters; a send without a delivery id posts anew', async () => {
    expect(discordNonce('reply-x#0')).not.toBe(discordNonce('reply-x#1'));
    expect(discordNonce(`${'r'.repeat(300)}#12`).length).toBeLessThanOrEqual(25);
    const target = { chatId: FAKE_DISCORD_IDS.dmChannel };
    await channel.send(target, { text: 'a notice', mode: 'plain' });
    await channel.send(target, { text: 'a notice', mode: 'plain' });
    expect([...fake.messages.values()]).toEqual(['a notice', 'a notice']);
  });
});
