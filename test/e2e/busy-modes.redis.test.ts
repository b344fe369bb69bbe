/**
 * Busy modes through the whole stack, on the web chat (its HTTP API, as the page uses it) and on the
 * fake Telegram: a message sent while a 3-round tool loop runs joins the turn (`steer`, the default),
 * waits for its own turn (`/mode queue`), or stops the turn and is answered instead (`/mode interrupt`).
 */
import { describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import type { FakeReply, FakeRequest } from '../fakes/openai-server.js';
import { FIRST, transcriptRoles, replyMatching, SECOND, sendDuringTurn, toolLoop, useChatDrivers, userTexts } from '../helpers/busy-chat.js';
import { gate, pollUntil } from '../helpers/waits.js';

const DRIVERS = useChatDrivers();

describe.each(DRIVERS)('busy modes on %s', (_name, open) => {
  it('steer (the default): a message sent during the tool loop is read at the next model call and answered in the same turn', async () => {
    const held = gate();
    const chat = await open({ handler: toolLoop(async () => {
      await held.promise;
      return { toolCalls: [{ name: 'current_time', arguments: {} }] };
    }) }, 'steer');
    await chat.send(FIRST);
    await sendDuringTurn(chat, SECOND);
    held.open();
    await replyMatching(chat, (t) => t.startsWith('Done.'));

    const requests = chat.stack.agentRequests();
    expect(requests).toHaveLength(4);
    // The second call sees the message right after the first round's tool result, in order.
    const second = requests[1]!.messages;
    expect(second.at(-2)?.role).toBe('tool');
    expect(second.at(-1)).toMatchObject({ role: 'user' });
    expect(messageText(second.at(-1)!)).toBe(SECOND);
    expect(requests[0]!.messages.some((m) => m.role === 'user' && messageText(m) === SECOND)).toBe(false);
    const replies = (await chat.replies()).filter((t) => t.startsWith('Done.'));
    expect(replies).toEqual([`Done. I read: ${FIRST} | ${SECOND}`]);
    // The transcript holds the steered message once, where the model saw it: after the first round.
    expect(await transcriptRoles(chat)).toEqual([`user:${FIRST}`, 'assistant', 'tool', `user:${SECOND}`, 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    await pollUntil(async () => (await chat.stack.t.redis.llen(sessionKeys(chat.sessionId, chat.stack.t.keyPrefix).processing)) === 0);
  });

  it('queue (/mode queue): the message waits for its own turn, as before', async () => {
    const held = gate();
    const chat = await open({ handler: toolLoop(async () => {
      await held.promise;
      return { toolCalls: [{ name: 'current_time', arguments: {} }] };
    }) }, 'queue');
    await chat.send('/mode queue');
    await replyMatching(chat, (t) => t.includes('queue'));
    await chat.send(FIRST);
    await sendDuringTurn(chat, SECOND);
    held.open();
    await replyMatching(chat, (t) => t.includes(SECOND) && t.startsWith('Done.'));
    const replies = (await chat.replies()).filter((t) => t.startsWith('Done.'));
    expect(replies).toEqual([`Done. I read: ${FIRST}`, `Done. I read: ${FIRST} | ${SECOND}`]);
    const requests = chat.stack.agentRequests();
    expect(requests.slice(0, 4).every((r: FakeRequest) => !userTexts(r.messages).includes(SECOND))).toBe(true);
  });

  it('interrupt (/mode interrupt): the running turn stops and the new message is answered', async () => {
    const chat = await open({ handler: toolLoop(() => ({ hold: new Promise<FakeReply>(() => undefined) })) }, 'interrupt');
    await chat.send('/mode interrupt');
    await replyMatching(chat, (t) => t.includes('interrupt'));
    await chat.send(FIRST);
    await chat.stack.llm.waitForRequest(() => true);
    await chat.send(SECOND);
    await replyMatching(chat, (t) => t.startsWith('Done.'));
    const replies = await chat.replies();
    expect(replies).toContain('Stopped.');
    expect(replies.filter((t) => t.startsWith('Done.'))).toEqual([`Done. I read: ${FIRST} | ${SECOND}`]);
    expect(replies.indexOf('Stopped.')).toBeLessThan(replies.findIndex((t) => t.startsWith('Done.')));
  });

  it('/btw: a side question is answered from the context while the turn runs, and enters neither the turn nor the history', async () => {
    const held = gate();
    const chat = await open({ handler: toolLoop(async () => {
      await held.promise;
      return { toolCalls: [{ name: 'current_time', arguments: {} }] };
    }) }, 'btw');
    await chat.send(FIRST);
    await chat.stack.llm.waitForRequest(() => true);
    await chat.send('/btw what did I ask for?');
    // Answered while the turn's first model call still waits.
    await replyMatching(chat, (t) => t.startsWith('Aside:'));
    expect((await chat.replies()).filter((t) => t.startsWith('Aside:'))).toEqual([`Aside: you asked to ${FIRST}.`]);
    held.open();
    await replyMatching(chat, (t) => t.startsWith('Done.'));
    expect((await chat.replies()).filter((t) => t.startsWith('Done.'))).toEqual([`Done. I read: ${FIRST}`]);
    const turnRequests = chat.stack.agentRequests().filter((r) => !userTexts(r.messages).at(-1)?.startsWith('[Side question'));
    expect(turnRequests.every((r) => userTexts(r.messages).every((text) => !text.includes('what did I ask for')))).toBe(true);
    const transcript = await readTranscript(chat.stack.t.redis, sessionKeys(chat.sessionId, chat.stack.t.keyPrefix));
    expect(JSON.stringify(transcript)).not.toContain('what did I ask for');
  });
});
