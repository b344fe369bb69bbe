/**
 * The fake Telegram server judges two pollers as the real Bot API does: a getUpdates arriving while
 * another is open ends the open one with 409 — but a poll its client had already aborted is no
 * second poller (the 409 reaches nobody), even when the abort and the next call come together.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { waitUntil } from '../helpers/waits.js';

describe('fake Telegram: getUpdates conflicts', () => {
  let fake: FakeTelegramServer;
  beforeEach(async () => {
    fake = await startFakeTelegram();
  });
  afterEach(async () => {
    await fake.close();
  });
  const poll = (timeout: number, signal?: AbortSignal) => fetch(`${fake.apiRoot}/bot${fake.token}/getUpdates`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ timeout }), ...(signal ? { signal } : {}),
  });

  it('a second live poller ends the first with 409 and is counted', async () => {
    const first = poll(30);
    await waitUntil(fake, 'call', () => fake.callsOf('getUpdates').length === 1);
    const second = poll(0);
    const answer = await first;
    expect(answer.status).toBe(409);
    expect(((await answer.json()) as { description: string }).description).toMatch(/terminated by other getUpdates request/);
    expect((await second).status).toBe(200);
    expect(fake.getUpdatesConflicts).toBe(1);
  });

  it('a poll aborted just before the next call is not a conflict, and gets no update', async () => {
    const abort = new AbortController();
    const first = poll(30, abort.signal).catch((err: unknown) => err);
    await waitUntil(fake, 'call', () => fake.callsOf('getUpdates').length === 1);
    abort.abort();
    const second = await poll(0);
    expect(second.status).toBe(200);
    expect(await first).toBeInstanceOf(Error);
    // The next live poll is answered normally: the aborted one left nothing open.
    fake.pushMessage({ text: 'hello', chat: { id: 7, type: 'private' }, from: { id: 7, is_bot: false, first_name: 'P' } });
    const third = (await (await poll(5)).json()) as { result: unknown[] };
    expect(third.result).toHaveLength(1);
    expect(fake.getUpdatesConflicts).toBe(0);
  });
});
