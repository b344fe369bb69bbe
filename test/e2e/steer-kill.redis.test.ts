/**
 * Steering under kill -9, through the front ends: on the web chat (its HTTP API) and on the fake
 * Telegram, with `chatgate worker` processes. A message sent during a 3-round tool loop joins the
 * turn; the worker is SIGKILLed in the round after it joined; another worker resumes the turn and
 * answers both messages once, and the transcript holds each message once. In `interrupt` mode the
 * turn the new message starts dies the same way and is resumed: one "Stopped.", one answer.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionKeys } from '../../src/redis/keys.js';
import type { FakeHandler, FakeReply } from '../fakes/openai-server.js';
import { FIRST, replyMatching, SECOND, sendDuringTurn, toolLoop, transcriptRoles, useChatDrivers, userTexts, type ChatDriver } from '../helpers/busy-chat.js';
import { spawnCliWorker, startModelsFront } from '../helpers/cli-worker.js';
import { gate, pollUntil } from '../helpers/waits.js';

const THIRD = 'and tell me when it is done';
const DRIVERS = useChatDrivers();

describe.each(DRIVERS)('a steered message under kill -9 of its worker, on %s', (_name, open) => {
  const children: ChildProcess[] = [];
  let front: Awaited<ReturnType<typeof startModelsFront>> | undefined;
  afterEach(async () => {
    await Promise.all(children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    }));
    await front?.close();
    front = undefined;
  });

  /** A `chatgate worker` process on the chat's Redis and fake model, with a short lease so a dead one's turn is taken over soon. */
  const startWorker = async (chat: ChatDriver): Promise<ChildProcess> => {
    const { t } = chat.stack;
    front ??= await startModelsFront(chat.stack.llm.baseURL);
    const child = await spawnCliWorker({
      redisUrl: t.url, keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, baseURL: front.baseURL,
      env: { CHATGATE_LEASE_TTL_MS: '1500', CHATGATE_TURN_LOCK_MS: '1500' },
    });
    children.push(child);
    return child;
  };

  it('is answered once in the turn resumed by another worker, and is in the transcript once', async () => {
    const first = gate();
    const reachedSecondCall = gate();
    let victimCalls = 0;
    const loop = toolLoop(async () => {
      await first.promise;
      return { toolCalls: [{ name: 'current_time', arguments: {} }] };
    });
    // The turn's second call (the first that reads the steered message) never returns to the first worker: it dies there.
    const handler: FakeHandler = (request) => {
      const secondCall = request.messages.filter((m) => m.role === 'tool').length === 1 && userTexts(request.messages).includes(SECOND);
      if (secondCall && victimCalls++ === 0) {
        reachedSecondCall.open();
        return { hold: new Promise<FakeReply>(() => undefined) };
      }
      return loop(request);
    };
    const chat = await open({ handler, noWorker: true }, 'steer-kill');
    const victim = await startWorker(chat);
    await chat.send(FIRST);
    await sendDuringTurn(chat, SECOND);
    first.open();
    await reachedSecondCall.promise;
    await startWorker(chat);
    victim.kill('SIGKILL');
    await once(victim, 'exit');

    await replyMatching(chat, (text) => text.startsWith('Done.'));
    await chat.send(THIRD);
    await replyMatching(chat, (text) => text.includes(THIRD));
    const keys = sessionKeys(chat.sessionId, chat.stack.t.keyPrefix);
    await pollUntil(async () => (await chat.stack.t.redis.exists(keys.processing, keys.inbox)) === 0);

    // One answer for the turn both messages were in, one for the next: nothing lost, nothing doubled, no failure notice.
    expect(await chat.replies()).toEqual([`Done. I read: ${FIRST} | ${SECOND}`, `Done. I read: ${FIRST} | ${SECOND} | ${THIRD}`]);
    // The steered message is where the model first saw it, once; the dead worker's unanswered call left nothing.
    const resumed = [`user:${FIRST}`, 'assistant', 'tool', `user:${SECOND}`, 'assistant', 'tool', 'assistant', 'tool', 'assistant'];
    expect(await transcriptRoles(chat)).toEqual([...resumed, `user:${THIRD}`, 'assistant']);
    for (const request of chat.stack.agentRequests().slice(1)) {
      expect(userTexts(request.messages).filter((text) => text === SECOND)).toHaveLength(1);
    }
  }, 180_000);

  it('interrupt: the turn the new message starts survives its worker dying, and answers once', async () => {
    const never = (): FakeReply => ({ hold: new Promise<FakeReply>(() => undefined) });
    const reachedNewTurn = gate();
    let victimCalls = 0;
    const loop = toolLoop(never);
    // The first turn waits until the interrupt stops it; the new turn's first call dies with its worker.
    const handler: FakeHandler = (request) => {
      if (userTexts(request.messages).includes(SECOND) && victimCalls++ === 0) {
        reachedNewTurn.open();
        return never();
      }
      return loop(request);
    };
    const chat = await open({ handler, noWorker: true }, 'interrupt-kill');
    const victim = await startWorker(chat);
    await chat.send('/mode interrupt');
    await replyMatching(chat, (text) => text.includes('interrupt'));
    await chat.send(FIRST);
    await chat.stack.llm.waitForRequest(() => true);
    await chat.send(SECOND);
    await reachedNewTurn.promise;
    await startWorker(chat);
    victim.kill('SIGKILL');
    await once(victim, 'exit');

    await replyMatching(chat, (text) => text.startsWith('Done.'));
    const keys = sessionKeys(chat.sessionId, chat.stack.t.keyPrefix);
    await pollUntil(async () => (await chat.stack.t.redis.exists(keys.processing, keys.inbox)) === 0);
    const replies = await chat.replies();
    expect(replies.filter((text) => text === 'Stopped.')).toHaveLength(1);
    expect(replies.filter((text) => text.startsWith('Done.'))).toEqual([`Done. I read: ${FIRST} | ${SECOND}`]);
    expect(replies.indexOf('Stopped.')).toBeLessThan(replies.findIndex((text) => text.startsWith('Done.')));
    // Each message once in the transcript: the stopped turn committed nothing, the resumed one both.
    const users = (await transcriptRoles(chat)).filter((role) => role.startsWith('user:'));
    expect(users).toEqual([`user:${FIRST}`, `user:${SECOND}`]);
  }, 180_000);
});
