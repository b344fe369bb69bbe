import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText, type ChatMessage } from '../../src/core/messages.js';
import { createTranscriber } from '../../src/llm/transcribe.js';
import { createSilentLogger } from '../../src/log.js';
import { attachmentIdOf, storeAttachment } from '../../src/redis/attachments.js';
import { attachmentKey } from '../../src/redis/keys.js';
import { createAttachmentReader, MAX_INLINE_IMAGES } from '../../workers/attachments.js';
import { toUserMessage } from '../../workers/model-request.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { oggBytes, pngBytes } from '../helpers/files.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const SESSION = 'web:reader';
let t: TestRedis;
let llm: FakeOpenAI;

beforeEach(async () => {
  t = createTestRedis();
  llm = await startFakeOpenAI();
});

afterEach(async () => {
  await llm.close();
  await t.cleanup();
});

async function inbound(n: number, files: Array<{ kind: 'photo' | 'voice' | 'document'; bytes: Buffer; fileName: string; mimeType: string }>): Promise<InboundMessage> {
  const id = `web:reader:${n}`;
  const attachments = [];
  for (const [k, file] of files.entries()) {
    const stored = await storeAttachment(t.redis, SESSION, attachmentIdOf(id, k), file.bytes, { keyPrefix: t.keyPrefix, ttlSeconds: 60 });
    attachments.push({ kind: file.kind, ref: `ref-${k}`, fileName: file.fileName, mimeType: file.mimeType, size: file.bytes.length, stored });
  }
  return { id, channel: 'web', chatId: 'reader', userId: 'u', userName: 'U', text: `message ${n}`, attachments, receivedAt: 0 };
}

const reader = (vision = true, transcriber = createTranscriber({ baseURL: llm.baseURL, apiKey: 'k', model: 'whisper-1', maxRetries: 0 })) =>
  createAttachmentReader({ redis: t.redis, keyPrefix: t.keyPrefix, log: createSilentLogger(), transcriber }, { vision });

describe('attachment reader', () => {
  it('inlines a stored image, and shows a placeholder once its bytes expired', async () => {
    const r = reader();
    const message = await inbound(1, [{ kind: 'photo', bytes: pngBytes(40), fileName: 'cat.png', mimeType: 'image/png' }]);
    const user = toUserMessage(message, await r.read(SESSION, message));
    const [inlined] = await r.inline(SESSION, [user], new Map());
    expect(JSON.stringify(inlined!.content)).toContain(`data:image/png;base64,${pngBytes(40).toString('base64')}`);
    await t.redis.del(attachmentKey(SESSION, message.attachments[0]!.stored!.id, t.keyPrefix));
    const [expired] = await r.inline(SESSION, [user], new Map());
    expect(messageText(expired!)).toBe('message 1\n[chatgate:image] cat.png (image no longer stored)');
  });

  it(`inlines only the newest ${MAX_INLINE_IMAGES} images of a request`, async () => {
    const r = reader();
    const history: ChatMessage[] = [];
    for (let n = 0; n < MAX_INLINE_IMAGES + 2; n++) {
      const message = await inbound(n, [{ kind: 'photo', bytes: pngBytes(20 + n), fileName: `p${n}.png`, mimeType: 'image/png' }]);
      history.push(toUserMessage(message, await r.read(SESSION, message)), { role: 'assistant', content: 'ok' });
    }
    const out = await r.inline(SESSION, history, new Map());
    const text = JSON.stringify(out);
    expect(text.match(/data:image\/png/g)).toHaveLength(MAX_INLINE_IMAGES);
    expect(text).toContain('p0.png (an earlier image, no longer shown)');
    expect(text).toContain('p1.png (an earlier image, no longer shown)');
  });

  it('tells the user when a voice message could not be transcribed, and the model gets a note instead', async () => {
    llm.setTranscriber(() => ({ status: 500, message: 'transcriber down' }));
    const r = reader();
    const message = await inbound(2, [{ kind: 'voice', bytes: oggBytes(), fileName: 'voice-2.ogg', mimeType: 'audio/ogg' }]);
    const files = await r.read(SESSION, message);
    expect(files.texts).toEqual(['[voice message: could not be transcribed]']);
    expect(files.notices[0]).toMatch(/^I could not transcribe your voice message \(.*500.*\)\. Please send it again in a moment, or type it\.$/);
  });

  it('says a document is gone when its bytes expired before the turn', async () => {
    const r = reader();
    const message = await inbound(3, [{ kind: 'document', bytes: Buffer.from('hello'), fileName: 'a.txt', mimeType: 'text/plain' }]);
    await t.redis.del(attachmentKey(SESSION, message.attachments[0]!.stored!.id, t.keyPrefix));
    const files = await r.read(SESSION, message);
    expect(files.texts).toEqual(['[file a.txt: no longer stored, so it was not read]']);
    expect(files.notices).toHaveLength(1);
  });

  it('tells a session without vision once, across readers', async () => {
    expect(await reader(false).firstVisionNotice(SESSION)).toBe(true);
    expect(await reader(false).firstVisionNotice(SESSION)).toBe(false);
  });
});
