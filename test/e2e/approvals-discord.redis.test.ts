/**
 * Approvals through the fake Discord with discord().js unmodified: the question carries an action row
 * of buttons (custom_id = the command); a press is an INTERACTION_CREATE, acknowledged at the interaction
 * callback, and the decision edits the question to show it without buttons; the turn goes on. Two presses
 * at once run the call once (the other is told privately, the decision left shown). A typed command
 * decides the question the same way: it shows the decision and loses its buttons. A gateway slower than the press allows is
 * answered by deferring. In a guild only the user who started the turn or
 * an operator-listed admin may decide: another user's press or typed command is refused, nothing runs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createDiscordChannel, type DiscordChannelOptions } from '../../channels/discord/index.js';
import { messageText } from '../../src/core/messages.js';
import { FAKE_DISCORD_IDS, startFakeDiscord } from '../fakes/discord-server.js';
import type { InteractionAnswer } from '../fakes/discord-interactions.js';
import { createFileWriter } from '../helpers/files.js';
import { useFakeServer } from '../helpers/fake-fixture.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { waitUntil } from '../helpers/waits.js';

/** The test's folder and `write_file`, a tool with a real effect there that asks first. */
const { tool: writeFile, lines, remove } = createFileWriter('chatgate-discord-approvals-');
afterAll(remove);


const MESSAGES = /^\/channels\/\d+\/messages$/;
const ADA = { id: FAKE_DISCORD_IDS.user, username: 'ada' };
const BOB = { id: '900000000000000031', username: 'bob' };
const CAROL = { id: '900000000000000032', username: 'carol' };

let stack: Stack | undefined;
const discord = useFakeServer(() => startFakeDiscord(), async () => {
  await stack?.close();
  stack = undefined;
});


async function start(options: Partial<DiscordChannelOptions> = {}, env: Record<string, string> = {}): Promise<Stack> {
  const channel = createDiscordChannel({}, { token: discord().token, apiRoot: discord().apiRoot, readyTimeoutMs: 10_000, ...options });
  stack = await startStack({
    channels: { list: [channel] }, tools: [writeFile], env: { CHATGATE_LIVE_REPLIES: 'false', ...env },
    // Asked to write, the model calls write_file once (file: the first word); after a tool result it answers with it.
    handler: (request) => {
      const last = request.messages.at(-1)!;
      if (last.role === 'tool') return { content: `Done: ${messageText(last)}` };
      const text = messageText(last).replace(/^[\w ]+: /, ''); // in groups: `<name>: <text>`
      return { toolCalls: [{ name: 'write_file', arguments: { file: `${text.split(' ')[0]}.txt`, text }, id: `call_${request.index}` }] };
    },
  });
  await discord().waitForGateway(2);
  return stack;
}

const posts = () => discord().callsOf('POST', MESSAGES);
const answers = (): InteractionAnswer[] => discord().interactions.answers;
const until = (condition: () => boolean): Promise<void> => waitUntil(discord(), 'call', condition);

/** Says `content` (a DM, or a mention in the guild channel) and resolves with the question's message id and approval id. */
async function asked(content: string, where: 'dm' | 'guild' = 'dm', author = ADA): Promise<{ messageId: string; id: string }> {
  const before = posts().length;
  if (where === 'guild') discord().dispatchMessage({ content: `<@${FAKE_DISCORD_IDS.bot}> ${content}`, where, mentions: [FAKE_DISCORD_IDS.bot], author });
  else discord().dispatchMessage({ content, where, author });
  await until(() => posts().slice(before).some((call) => String(call.body?.content).includes('Approval needed')));
  const messageId = [...discord().messages].find(([, text]) => text.includes('Approval needed') && text.includes(content.split(' ')[0]!))![0];
  const id = /\(([a-z0-9]{6})\)/.exec(discord().messageContent(messageId)!)![1]!;
  return { messageId, id };
}

describe('approvals on Discord (buttons, interactions)', () => {
  it('sends the buttons; Approve updates the question to show the decision without buttons, writes once, and the turn goes on', async () => {
    await start();
    const { messageId, id } = await asked('alpha one');
    const question = posts().find((call) => String(call.body?.content).includes(`(${id})`))!;
    expect(question.body?.components).toEqual([{ type: 1, components: [
      { type: 2, style: 3, label: 'Approve', custom_id: `/approve ${id}` },
      { type: 2, style: 2, label: 'Always in this chat', custom_id: `/approve ${id} always` },
      { type: 2, style: 4, label: 'Deny', custom_id: `/deny ${id}` },
    ] }]);
    expect(lines('alpha.txt')).toEqual([]);

    discord().pressButton(messageId, `/approve ${id}`);
    await until(() => posts().some((call) => call.body?.content === 'Done: wrote alpha.txt'));
    // The decision edited the question itself; the press is acknowledged without a second edit.
    expect(answers()).toEqual([expect.objectContaining({ kind: 'callback', type: 6 })]);
    expect(discord().messageContent(messageId)).toContain(`Approval needed** (${id})`);
    expect(discord().messageContent(messageId)).toMatch(new RegExp(`\\n\\nApproved by Ada Lovelace: write_file \\(${id}\\)\\.$`));
    expect(discord().components.has(messageId)).toBe(false);
    expect(lines('alpha.txt')).toEqual(['alpha one']);
    // Its buttons are gone: nobody can press them again.
    expect(() => discord().pressButton(messageId, `/approve ${id}`)).toThrow(/has no button/);
  });

  it('two presses at once run the call once: one updates the question, the other is told privately', async () => {
    await start();
    const { messageId, id } = await asked('beta two');
    discord().pressButton(messageId, `/approve ${id}`);
    discord().pressButton(messageId, `/deny ${id}`);
    await until(() => answers().length === 3 && posts().some((call) => call.body?.content === 'Done: wrote beta.txt'));
    // Both presses are acknowledged; the one that came second is told privately.
    expect(answers().filter((a) => a.kind === 'callback').map((a) => a.type)).toEqual([6, 6]);
    expect(discord().components.has(messageId)).toBe(false);
    expect(answers().find((a) => a.kind === 'follow-up')).toMatchObject({ ephemeral: true, content: `Already decided — Approved by Ada Lovelace: write_file (${id}).` });
    expect(discord().messageContent(messageId)).toMatch(/Approved by Ada Lovelace: write_file \([a-z0-9]{6}\)\.$/);
    expect(lines('beta.txt')).toEqual(['beta two']);
  });

  it('a question decided by a typed command shows the decision and loses its buttons, as after a press', async () => {
    await start();
    const { messageId, id } = await asked('epsilon five');
    discord().dispatchMessage({ content: `/deny ${id}`, where: 'dm', author: ADA });
    await until(() => posts().some((call) => String(call.body?.content).startsWith('Done: Error: the user denied')));
    await until(() => !discord().components.has(messageId));
    expect(discord().messageContent(messageId)).toContain(`Approval needed** (${id})`);
    expect(discord().messageContent(messageId)).toMatch(new RegExp(`\\n\\nDenied by Ada Lovelace: write_file \\(${id}\\)\\.$`));
    expect(() => discord().pressButton(messageId, `/approve ${id}`)).toThrow(/has no button/);
    expect(answers()).toEqual([]);
    expect(lines('epsilon.txt')).toEqual([]);
  });

  it('a gateway slower than the press allows: the press is deferred, and the decision shows on the question', async () => {
    await start({ pressDeferAfterMs: 0 });
    const { messageId, id } = await asked('gamma three');
    discord().pressButton(messageId, `/deny ${id}`);
    await until(() => answers().length === 1 && discord().messageContent(messageId)!.includes('Denied by'));
    expect(answers().map((a) => [a.kind, a.type])).toEqual([['callback', 6]]);
    expect(discord().messageContent(messageId)).toMatch(new RegExp(`Denied by Ada Lovelace: write_file \\(${id}\\)\\.$`));
    expect(discord().components.has(messageId)).toBe(false);
    await until(() => posts().some((call) => String(call.body?.content).startsWith('Done: Error: the user denied')));
    expect(lines('gamma.txt')).toEqual([]);
  });

  it('in a guild only the user who started the turn or an admin may decide; others are told and nothing runs', async () => {
    await start({}, { CHATGATE_APPROVAL_ADMINS: `discord:${CAROL.id}` });
    const { messageId, id } = await asked('delta four', 'guild');
    discord().pressButton(messageId, `/approve ${id}`, BOB);
    await until(() => answers().length === 1);
    expect(answers()[0]).toMatchObject({ kind: 'callback', type: 4, ephemeral: true, content: `Only Ada Lovelace, whose message started this, or an admin can decide ${id} (write_file).` });
    const before = posts().length;
    discord().dispatchMessage({ content: `/approve ${id}`, where: 'guild', author: BOB });
    await until(() => posts().length > before);
    expect(posts()[before]!.body?.content).toBe(`Only Ada Lovelace, whose message started this, or an admin can decide ${id} (write_file).`);
    expect(discord().components.has(messageId)).toBe(true);
    expect(lines('delta.txt')).toEqual([]);

    // An operator-listed admin may decide.
    discord().pressButton(messageId, `/approve ${id}`, CAROL);
    await until(() => posts().some((call) => call.body?.content === 'Done: wrote delta.txt'));
    expect(answers()[1]).toMatchObject({ kind: 'callback', type: 6 });
    expect(discord().messageContent(messageId)).toContain(`Approved by carol: write_file (${id}).`);
    expect(lines('delta.txt')).toEqual(['delta four']);
  });
});
