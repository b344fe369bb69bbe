/**
 * The fake Discord refuses what Discord refuses around buttons: components that break Discord's rules
 * (50035), an interaction answered twice (40060), late or unknown (10062), an answer of a type a
 * button cannot get (50035); webhook edits need an answered interaction.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_DISCORD_IDS, startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';

let discord: FakeDiscordServer;
beforeEach(async () => {
  discord = await startFakeDiscord();
});
afterEach(async () => {
  await discord.close();
});

const row = (...buttons: unknown[]) => [{ type: 1, components: buttons }];
const button = (customId: string, label = 'Go') => ({ type: 2, style: 1, label, custom_id: customId });

async function call(method: string, path: string, body: unknown, auth = true): Promise<{ status: number; body: { code?: number } }> {
  const res = await fetch(`${discord.apiRoot}/v10${path}`, {
    method, headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bot ${discord.token}` } : {}) }, body: JSON.stringify(body),
  });
  return { status: res.status, body: res.status === 204 ? {} : (await res.json()) as { code?: number } };
}

/** Posts a message with one button `/go` and returns an interaction of ada pressing it. */
async function pressed(): Promise<{ id: string; token: string; messageId: string }> {
  const created = await call('POST', `/channels/${FAKE_DISCORD_IDS.dmChannel}/messages`, { content: 'Go?', components: row(button('/go')) });
  const messageId = (created.body as { id: string }).id;
  const payload = discord.interactions.press(messageId, '/go', { channel: { id: FAKE_DISCORD_IDS.dmChannel, type: 1 } }, { id: FAKE_DISCORD_IDS.user, username: 'ada' });
  return { id: String(payload.id), token: String(payload.token), messageId };
}

describe('fake Discord interactions', () => {
  it.each([
    ['a custom_id over 100 characters', row(button('x'.repeat(101)))],
    ['two buttons with one custom_id', row(button('/a'), button('/a'))],
    ['six buttons in a row', row(...['1', '2', '3', '4', '5', '6'].map((k) => button(`/${k}`)))],
    ['a label over 80 characters', row(button('/a', 'l'.repeat(81)))],
    ['a button outside an action row', [button('/a')]],
  ])('refuses a message with %s (50035)', async (_name, components) => {
    expect(await call('POST', `/channels/${FAKE_DISCORD_IDS.dmChannel}/messages`, { content: 'x', components })).toMatchObject({ status: 400, body: { code: 50035 } });
  });

  it('answers an interaction once, without the bot token; a second answer is 40060; an unknown one 10062', async () => {
    const { id, token, messageId } = await pressed();
    expect(await call('POST', `/interactions/${id}/wrong-token/callback`, { type: 6 }, false)).toMatchObject({ status: 404, body: { code: 10062 } });
    expect(await call('POST', `/interactions/${id}/${token}/callback`, { type: 7, data: { content: 'Gone.', components: [] } }, false)).toMatchObject({ status: 204 });
    expect(discord.messageContent(messageId)).toBe('Gone.');
    expect(discord.components.has(messageId)).toBe(false);
    expect(await call('POST', `/interactions/${id}/${token}/callback`, { type: 4, data: { content: 'again' } }, false)).toMatchObject({ status: 400, body: { code: 40060 } });
    expect(() => discord.interactions.press(messageId, '/go', { channel: {} }, {})).toThrow(/has no button/);
  });

  it('refuses an answer of a type a button cannot get, and bad components in an update (50035)', async () => {
    const { id, token } = await pressed();
    expect(await call('POST', `/interactions/${id}/${token}/callback`, { type: 1 }, false)).toMatchObject({ status: 400, body: { code: 50035 } });
    expect(await call('POST', `/interactions/${id}/${token}/callback`, { type: 7, data: { components: row(button('y'.repeat(101))) } }, false)).toMatchObject({ status: 400, body: { code: 50035 } });
    expect(await call('POST', `/interactions/${id}/${token}/callback`, { type: 7, data: { content: 'z'.repeat(2001) } }, false)).toMatchObject({ status: 400, body: { code: 50035 } });
  });

  it('a late answer is an unknown interaction (10062); the webhook needs an answered interaction', async () => {
    await discord.close();
    discord = await startFakeDiscord({ interactionAnswerMs: 0 });
    const { id, token } = await pressed();
    expect(await call('PATCH', `/webhooks/${FAKE_DISCORD_IDS.application}/${token}/messages/@original`, { content: 'early' }, false)).toMatchObject({ status: 401, body: { code: 50027 } });
    expect(await call('POST', `/interactions/${id}/${token}/callback`, { type: 6 }, false)).toMatchObject({ status: 404, body: { code: 10062 } });
  });
});
