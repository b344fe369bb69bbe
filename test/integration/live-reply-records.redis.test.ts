/**
 * The streams' view records (src/live-reply/record.ts) on real Redis: one gateway shows a stream at a
 * time, nothing is shown once the final reply took the stream over, and the final reply waits for a
 * call still running so a preview never lands on top of it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLiveReplyRecords, type LiveReplyRecords } from '../../src/live-reply/record.js';
import { liveReplyRecordKey } from '../../src/redis/keys.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const SESSION = 'discord:42';
const STREAM = 'reply-0123456789abcdef01234567-0';

describe('partial view records', () => {
  let t: TestRedis;
  let views: LiveReplyRecords;

  beforeEach(() => {
    t = createTestRedis();
    views = createLiveReplyRecords(t.redis, t.keyPrefix, { pollMs: 5 });
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('lets one gateway show a stream; the other is refused while the first one\'s claim lives', async () => {
    expect(await views.begin(SESSION, STREAM, 'gw-a')).toEqual({ go: true });
    expect(await views.begin(SESSION, STREAM, 'gw-b')).toEqual({ go: false, reason: 'other' });
    await views.end(SESSION, STREAM, 'gw-a', { message: 'set', messageId: 'm1' });
    expect(await views.begin(SESSION, STREAM, 'gw-b')).toEqual({ go: false, reason: 'other' });
    expect(await views.begin(SESSION, STREAM, 'gw-a')).toEqual({ go: true, messageId: 'm1' });
    // A caller that is not the shower writes nothing.
    await views.end(SESSION, STREAM, 'gw-b', { message: 'clear' });
    expect(await views.read(SESSION, STREAM)).toEqual({ messageId: 'm1', final: false });
  });

  it('after the final reply took a stream over, no gateway may show it, and the final gets its message', async () => {
    await views.begin(SESSION, STREAM, 'gw-a');
    await views.end(SESSION, STREAM, 'gw-a', { message: 'set', messageId: 'm1' });
    expect(await views.takeOver(SESSION, STREAM)).toBe('m1');
    expect(await views.begin(SESSION, STREAM, 'gw-a')).toEqual({ go: false, reason: 'final' });
    expect(await views.begin(SESSION, STREAM, 'gw-b')).toEqual({ go: false, reason: 'final' });
    expect(await views.read(SESSION, STREAM)).toEqual({ messageId: 'm1', final: true });
    expect(await t.redis.pttl(liveReplyRecordKey(SESSION, STREAM, t.keyPrefix))).toBeGreaterThan(0);
  });

  it('the final reply waits for a call another gateway is making, and learns the message that call sent', async () => {
    expect(await views.begin(SESSION, STREAM, 'gw-a')).toEqual({ go: true });
    let taken: string | undefined | 'pending' = 'pending';
    const takeOver = views.takeOver(SESSION, STREAM).then((id) => (taken = id));
    // The final mark is down before the wait: the running call's shower can begin nothing more.
    for (;;) {
      if ((await views.read(SESSION, STREAM)).final) break;
    }
    expect(taken).toBe('pending');
    await views.end(SESSION, STREAM, 'gw-a', { message: 'set', messageId: 'm-first-preview' });
    await takeOver;
    expect(taken).toBe('m-first-preview');
  });

  it('a claim of a gateway that died expires: another gateway shows the stream on in the same message', async () => {
    const quick = createLiveReplyRecords(t.redis, t.keyPrefix, { ownerMs: 30, callMs: 30, pollMs: 5 });
    await quick.begin(SESSION, STREAM, 'gw-dead');
    await quick.end(SESSION, STREAM, 'gw-dead', { message: 'set', messageId: 'm1' });
    let call = await quick.begin(SESSION, STREAM, 'gw-b');
    while (!call.go) call = await quick.begin(SESSION, STREAM, 'gw-b');
    expect(call).toEqual({ go: true, messageId: 'm1' });
  });

  it('a call that never ends holds the final reply back for its call time only', async () => {
    const quick = createLiveReplyRecords(t.redis, t.keyPrefix, { ownerMs: 40, callMs: 40, pollMs: 5 });
    await quick.begin(SESSION, STREAM, 'gw-hung');
    expect(await quick.takeOver(SESSION, STREAM)).toBeUndefined();
    expect(await quick.begin(SESSION, STREAM, 'gw-hung')).toEqual({ go: false, reason: 'final' });
  });

  it('refuses malformed arguments in the scripts', async () => {
    await expect(views.begin(SESSION, STREAM, '')).rejects.toThrow(/owner must be a non-empty string/);
  });
});
