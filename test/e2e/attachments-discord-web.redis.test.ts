import { afterEach, describe, expect, it } from 'vitest';
import { createDiscordChannel } from '../../channels/discord/index.js';
import { createWebChannel } from '../../channels/web/index.js';
import { messageText, type ChatMessage } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscriptBefore } from '../../src/redis/transcript.js';
import { FAKE_DISCORD_IDS, startFakeDiscord, type FakeDiscordServer } from '../fakes/discord-server.js';
import { makePdf, pngBytes } from '../helpers/files.js';
import { startStack, type Stack } from '../helpers/stack.js';

const MESSAGES = /^\/channels\/\d+\/messages$/;
let discord: FakeDiscordServer | undefined;
let stack: Stack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await discord?.close();
  discord = undefined;
});

const lastUser = (s: Stack): ChatMessage => s.agentRequests().at(-1)!.messages.filter((m) => m.role === 'user').at(-1)!;
const attachmentKeys = (s: Stack) => s.t.redis.keys(`${s.t.keyPrefix}*:att:*`);

async function startDiscord(env: Record<string, string> = {}): Promise<Stack> {
  discord = await startFakeDiscord();
  const channel = createDiscordChannel({}, { token: discord.token, apiRoot: discord.apiRoot, readyTimeoutMs: 10_000 });
  stack = await startStack({ channels: { list: [channel] }, handler: () => ({ content: 'got it' }), env: { CHATGATE_VISION: 'true', ...env } });
  return stack;
}

async function startWeb(env: Record<string, string> = {}): Promise<Stack> {
  const readTranscript = (id: string, before: string | undefined, count: number) => readTranscriptBefore(stack!.t.redis, sessionKeys(id, stack!.t.keyPrefix), before, count);
  const web = createWebChannel({ readTranscript }, { maxUploadBytes: Number(env.CHATGATE_MAX_ATTACHMENT_BYTES ?? 10 * 1024 * 1024) });
  stack = await startStack({ channels: { list: [web], mount: (app) => app.route('/', web.app) }, handler: () => ({ content: 'got it' }), env: { CHATGATE_VISION: 'true', ...env } });
  return stack;
}

function upload(s: Stack, conversation: string, fields: Record<string, string>, file?: { bytes: Buffer; name: string; type: string }): Promise<Response> {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) form.set(key, value);
  if (file) form.set('file', new Blob([new Uint8Array(file.bytes)], { type: file.type }), file.name);
  return fetch(`${s.gateway.httpUrl}/api/chat/${conversation}/messages`, { method: 'POST', body: form });
}

describe('attachments through Discord', () => {
  it('sends an image from the CDN to the model and reads a CSV as text with its name', async () => {
    const s = await startDiscord();
    discord!.dispatchMessage({ where: 'dm', content: 'this one', attachments: [{ filename: 'chart.png', content_type: 'image/png', bytes: pngBytes(300) }] });
    await discord!.waitForCall('POST', MESSAGES);
    const parts = lastUser(s).content as Array<{ type: string; image_url?: { url: string } }>;
    expect(parts[1]!.image_url!.url).toBe(`data:image/png;base64,${pngBytes(300).toString('base64')}`);
    discord!.dispatchMessage({ where: 'dm', content: '', attachments: [{ filename: 'orders.csv', content_type: 'text/csv; charset=utf-8', bytes: Buffer.from('order\nORD-48213-XK\n') }] });
    await discord!.waitForCall('POST', MESSAGES, 2);
    expect(lastUser(s).content).toBe('[file orders.csv (text, 19 bytes)]\norder\nORD-48213-XK\n[end of orders.csv]');
    expect(discord!.cdnDownloads).toHaveLength(2);
  });

  it('stops a download that grows past the limit although Discord reported a small size, and stores nothing', async () => {
    const s = await startDiscord({ CHATGATE_MAX_ATTACHMENT_BYTES: '2048' });
    discord!.dispatchMessage({ where: 'dm', content: 'read', attachments: [{ filename: 'log.txt', content_type: 'text/plain', bytes: Buffer.alloc(8192, 97), size: 100 }] });
    const refusal = await discord!.waitForCall('POST', MESSAGES);
    expect(refusal.body?.content).toBe('"log.txt" is over the limit of 2 KB, so it was not read. Please send a smaller file (or paste the part that matters as text).');
    expect(await attachmentKeys(s)).toEqual([]);
    expect(await s.t.redis.llen(sessionKeys(`discord:${FAKE_DISCORD_IDS.dmChannel}`, s.t.keyPrefix).inbox)).toBe(0);
    expect(s.agentRequests()).toEqual([]);
  });
});

describe('web chat upload (multipart)', () => {
  it('accepts a PDF with a text and the model reads it with its file name', async () => {
    const s = await startWeb();
    const answer = await upload(s, 'up-1', { text: 'what does it say?', clientMessageId: 'm-1', userName: 'Ada' }, { bytes: makePdf(['Order ORD-48213-XK shipped']), name: 'receipt.pdf', type: 'application/pdf' });
    expect(answer.status).toBe(202);
    expect(await answer.json()).toEqual({ id: 'web:up-1:m-1', accepted: true });
    const request = await s.llm.waitForRequest((r) => JSON.stringify(r.messages).includes('receipt.pdf'));
    expect(messageText(request.messages.at(-1)!)).toMatch(/^what does it say\?\n\n\[file receipt\.pdf \(PDF, .*, 1 page\)\]\nOrder ORD-48213-XK shipped/);
    // The page's history shows what the user wrote and the file's name, not the file's text.
    const history = await (await fetch(`${s.gateway.httpUrl}/api/chat/up-1/history`)).json() as { messages: Array<Record<string, unknown>> };
    expect(history.messages[0]).toMatchObject({ id: 'web:up-1:m-1', role: 'user', text: 'what does it say?', attachments: [{ kind: 'document', fileName: 'receipt.pdf' }] });
  });

  it('answers 413 too_large and 415 unsupported, storing nothing, and 400 for a form with neither text nor file', async () => {
    const s = await startWeb({ CHATGATE_MAX_ATTACHMENT_BYTES: '4096' });
    const big = await upload(s, 'up-2', { clientMessageId: 'm-1' }, { bytes: Buffer.alloc(5000, 65), name: 'big.txt', type: 'text/plain' });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ refused: 'too_large', error: expect.stringContaining('"big.txt" is 4.9 KB; the limit is 4 KB') });
    const zip = await upload(s, 'up-2', { clientMessageId: 'm-2' }, { bytes: Buffer.from('PK\u0003\u0004'), name: 'a.zip', type: 'application/zip' });
    expect(zip.status).toBe(415);
    expect(await zip.json()).toMatchObject({ refused: 'unsupported', error: expect.stringContaining('I can read images (JPEG, PNG, GIF, WebP), PDFs') });
    const fake = await upload(s, 'up-2', { clientMessageId: 'm-3' }, { bytes: Buffer.from('<svg/>'), name: 'cat.png', type: 'image/png' });
    expect(fake.status).toBe(415);
    const empty = await upload(s, 'up-2', { clientMessageId: 'm-4' });
    expect(empty.status).toBe(400);
    expect(await attachmentKeys(s)).toEqual([]);
    expect(s.agentRequests()).toEqual([]);
  });
});
