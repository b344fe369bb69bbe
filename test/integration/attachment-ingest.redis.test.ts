import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHANNEL_ERROR_CODES, type Channel } from '../../channels/channel.js';
import type { Attachment, InboundMessage } from '../../src/core/inbound.js';
import { ChannelError } from '../../src/errors.js';
import { createAttachmentIngest, type AttachmentIngestOptions } from '../../src/gateway/attachments.js';
import { createSilentLogger } from '../../src/log.js';
import { attachmentKey } from '../../src/redis/keys.js';
import { pngBytes } from '../helpers/files.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

const SESSION = 'telegram:7';
let t: TestRedis;

beforeEach(() => {
  t = createTestRedis();
});

afterEach(async () => {
  await t.cleanup();
});

/** A channel whose downloads answer from `files` (or throw what `fail` says). */
function channel(files: Record<string, Buffer>, fail?: ChannelError): Channel {
  return {
    name: 'telegram', maxMessageLength: 4096, lengthUnit: 'utf16', formatting: 'plain', typingIntervalMs: 1000,
    start: async () => undefined, stop: async () => undefined, send: async () => ({ messageId: '1' }), sendTyping: async () => undefined,
    async downloadAttachment(attachment) {
      if (fail) throw fail;
      return files[attachment.ref]!;
    },
  };
}

const message = (attachments: Attachment[]): InboundMessage => ({ id: 'telegram:7:1', channel: 'telegram', chatId: '7', userId: '7', userName: 'A', text: '', attachments, receivedAt: 0 });
const options = (o: Partial<AttachmentIngestOptions> = {}): AttachmentIngestOptions => ({ keyPrefix: t.keyPrefix, maxBytes: 1024, ttlSeconds: 120, transcription: false, ...o });

describe('gateway attachment step', () => {
  it('stores the bytes under a key derived from the message with the TTL, and a re-delivery overwrites it', async () => {
    const step = createAttachmentIngest({ redis: t.redis, log: createSilentLogger(), channel: () => channel({ f1: pngBytes(100) }) }, options());
    const first = await step.take(message([{ kind: 'photo', ref: 'f1', size: 100 }]), SESSION);
    expect(first).toMatchObject({ ok: true, attachments: [{ kind: 'photo', mimeType: 'image/png', size: 100, stored: { bytes: 100 } }] });
    const id = first.ok ? first.attachments[0]!.stored!.id : '';
    const key = attachmentKey(SESSION, id, t.keyPrefix);
    expect(await t.redis.getBuffer(key)).toEqual(pngBytes(100));
    const ttl = await t.redis.ttl(key);
    expect(ttl).toBeGreaterThan(100);
    expect(ttl).toBeLessThanOrEqual(120);
    await step.take(message([{ kind: 'photo', ref: 'f1', size: 100 }]), SESSION);
    expect(await t.redis.keys(`${t.keyPrefix}*:att:*`)).toEqual([key]);
  });

  it('rejects when Redis is down (the platform re-delivers) and when the download fails transiently', async () => {
    const down = new Redis({ port: 1, maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null });
    down.on('error', () => undefined);
    const step = createAttachmentIngest({ redis: down, log: createSilentLogger(), channel: () => channel({ f1: pngBytes(50) }) }, options());
    await expect(step.take(message([{ kind: 'photo', ref: 'f1' }]), SESSION)).rejects.toThrow();
    down.disconnect();
    const flaky = createAttachmentIngest({ redis: t.redis, log: createSilentLogger(), channel: () => channel({}, new ChannelError('download failed (HTTP 502)', { retryable: true, code: CHANNEL_ERROR_CODES.transient })) }, options());
    await expect(flaky.take(message([{ kind: 'photo', ref: 'f1' }]), SESSION)).rejects.toThrow('HTTP 502');
    expect(await t.redis.keys(`${t.keyPrefix}*:att:*`)).toEqual([]);
  });

  it('refuses what is not what it claims, what a download finds too large, and what the channel cannot fetch for good', async () => {
    const step = (files: Record<string, Buffer>, fail?: ChannelError) => createAttachmentIngest({ redis: t.redis, log: createSilentLogger(), channel: () => channel(files, fail) }, options());
    expect(await step({ f: Buffer.from('GIF? no') }).take(message([{ kind: 'photo', ref: 'f', fileName: 'x.png' }]), SESSION)).toMatchObject({ ok: false, outcome: 'unsupported', reason: expect.stringContaining('does not look like') });
    expect(await step({ f: Buffer.from('hello') }).take(message([{ kind: 'document', ref: 'f', fileName: 'x.pdf', mimeType: 'application/pdf' }]), SESSION)).toMatchObject({ ok: false, outcome: 'unsupported', reason: '"x.pdf" is not a readable PDF.' });
    expect(await step({ f: Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 1]) }).take(message([{ kind: 'document', ref: 'f', fileName: 'notes.txt', mimeType: 'text/plain' }]), SESSION)).toMatchObject({ ok: false, outcome: 'unsupported', reason: '"notes.txt" is not a text file (it holds binary data), so I cannot read it.' });
    expect(await step({ f: Buffer.alloc(5000) }).take(message([{ kind: 'document', ref: 'f', fileName: 'x.txt' }]), SESSION)).toMatchObject({ ok: false, outcome: 'too_large' });
    const gone = new ChannelError('download failed for telegram file x.txt (HTTP 404)', { retryable: false, code: CHANNEL_ERROR_CODES.permanent });
    expect(await step({}, gone).take(message([{ kind: 'document', ref: 'f', fileName: 'x.txt' }]), SESSION)).toMatchObject({ ok: false, outcome: 'unsupported', reason: expect.stringContaining('Please send it again') });
    expect(await t.redis.keys(`${t.keyPrefix}*:att:*`)).toEqual([]);
  });
});
