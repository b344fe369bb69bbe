/**
 * `/retry` asks the last message again with its images while their bytes are still in Redis (the
 * model gets the same picture again); once they expired, the retried message carries the "image
 * no longer stored" placeholder instead and the answer to `/retry` names the image. A message that
 * was only an image can be retried too. Gateway and worker on real Redis, the fake Telegram and a
 * fake vision model.
 */
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/core/messages.js';
import { jpegBytes } from '../helpers/files.js';
import type { Stack } from '../helpers/stack.js';
import { useTelegramFixture } from '../helpers/telegram-stack.js';

const tg = useTelegramFixture();

const start = (): Promise<Stack> => tg.start({ handler: (request) => ({ content: `Answer ${request.index}` }), env: { CHATGATE_VISION: 'true' } });

const texts = tg.sent;
/** Waits for the bot's next message after `send()` and resolves with it. */
const next = tg.next;
const photo = (fileId: string) => [{ file_id: fileId, file_unique_id: `u-${fileId}`, width: 320, height: 320, file_size: 700 }];
const lastUser = (s: Stack) => s.agentRequests().at(-1)!.messages.filter((m) => m.role === 'user').at(-1)!.content as Exclude<ChatMessage['content'], string>;
const dataUrl = (bytes: Buffer) => `data:image/jpeg;base64,${bytes.toString('base64')}`;

describe('/retry with images', () => {
  it('sends the image again while it is stored; once it expired, the model reads the placeholder and the answer names it', async () => {
    const s = await start();
    const bytes = jpegBytes(700);
    tg.telegram.addFile('p1', bytes);
    expect(await next(() => tg.telegram.pushMessage({ caption: 'what is this?', photo: photo('p1') }))).toBe('Answer 0');
    expect(lastUser(s)).toEqual([{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: dataUrl(bytes), detail: 'auto' } }]);

    expect(await next(() => tg.telegram.pushMessage({ text: '/retry' }))).toBe('Asking again: “what is this?”');
    await tg.until(() => texts().includes('Answer 1'));
    expect(lastUser(s)).toEqual([{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: dataUrl(bytes), detail: 'auto' } }]);
    expect(tg.telegram.downloads).toHaveLength(1); // the bytes came from Redis, not from Telegram again

    // The TTL ran out (CHATGATE_ATTACHMENT_TTL_SECONDS): the bytes are gone.
    const keys = await s.t.redis.keys(`${s.t.keyPrefix}*:att:*`);
    expect(keys).toHaveLength(1);
    await s.t.redis.del(...keys);
    const name = /^photo-\d+\.jpg$/;
    const answer = await next(() => tg.telegram.pushMessage({ text: '/retry' }));
    expect(answer).toMatch(/^Asking again: “what is this\?” — without (photo-\d+\.jpg): kept for a limited time, it is gone now; send it again to have it looked at$/);
    const fileName = /without (\S+):/.exec(answer)![1]!;
    expect(fileName).toMatch(name);
    await tg.until(() => texts().includes('Answer 2'));
    expect(lastUser(s)).toEqual([{ type: 'text', text: 'what is this?' }, { type: 'text', text: `[chatgate:image] ${fileName} (image no longer stored)` }]);
  });

  it('retries a message that was only an image (no caption)', async () => {
    const s = await start();
    const bytes = jpegBytes(650);
    tg.telegram.addFile('p2', bytes);
    expect(await next(() => tg.telegram.pushMessage({ photo: photo('p2') }))).toBe('Answer 0');
    expect(await next(() => tg.telegram.pushMessage({ text: '/retry' }))).toMatch(/^Asking again: “\[photo-\d+\.jpg\]”$/);
    await tg.until(() => texts().includes('Answer 1'));
    expect(lastUser(s)).toEqual([{ type: 'image_url', image_url: { url: dataUrl(bytes), detail: 'auto' } }]);
    expect(s.agentRequests()[1]!.messages.filter((m) => m.role === 'assistant').map((m) => m.content)).not.toContain('Answer 0');
  });
});
