import { describe, expect, it } from 'vitest';
import { messageText, type ChatMessage } from '../../src/core/messages.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { sessionKeys } from '../../src/redis/keys.js';
import type { FakeHandler } from '../fakes/openai-server.js';
import { jpegBytes, makePdf, oggBytes } from '../helpers/files.js';
import type { Stack } from '../helpers/stack.js';
import { useTelegramFixture } from '../helpers/telegram-stack.js';

const tg = useTelegramFixture();

async function start(env: Record<string, string> = {}, handler: FakeHandler = () => ({ content: 'seen it' })): Promise<Stack> {
  const channel = { maxAttachmentBytes: Number(env.CHATGATE_MAX_ATTACHMENT_BYTES ?? 10 * 1024 * 1024) };
  return tg.start({ handler, channel, env: { CHATGATE_TRANSCRIBE_MODEL: 'whisper-1', CHATGATE_VISION: 'true', ...env } });
}

const sent = () => tg.telegram.callsOf('sendMessage').map((call) => String(call.params.text));
const lastUser = (s: Stack): ChatMessage => s.agentRequests().at(-1)!.messages.filter((m) => m.role === 'user').at(-1)!;
const attachmentKeys = (s: Stack) => s.t.redis.keys(`${s.t.keyPrefix}*:att:*`);

describe('attachments through Telegram', () => {
  it('sends the largest photo size within the limit to a vision model as a data: URL, keeping only a reference in the projection', async () => {
    const s = await start({ CHATGATE_MAX_ATTACHMENT_BYTES: '4096' });
    tg.telegram.addFile('p-small', jpegBytes(100));
    tg.telegram.addFile('p-mid', jpegBytes(2000));
    tg.telegram.addFile('p-huge', jpegBytes(50), { reportedSize: 90_000 });
    tg.telegram.pushMessage({ caption: 'what is this?', photo: [
      { file_id: 'p-small', file_unique_id: 's', width: 90, height: 90, file_size: 100 },
      { file_id: 'p-mid', file_unique_id: 'm', width: 320, height: 320, file_size: 2000 },
      { file_id: 'p-huge', file_unique_id: 'h', width: 1280, height: 1280, file_size: 90_000 },
    ] });
    await tg.telegram.waitForCall('sendMessage');
    const content = lastUser(s).content as Array<{ type: string; text?: string; image_url?: { url: string } }>;
    expect(content[0]).toEqual({ type: 'text', text: 'what is this?' });
    expect(content[1]!.image_url!.url).toBe(`data:image/jpeg;base64,${jpegBytes(2000).toString('base64')}`);
    expect(tg.telegram.downloads).toEqual([expect.stringContaining('p-mid')]);
    const history = await s.t.redis.lrange(sessionKeys('telegram:42', s.t.keyPrefix).history, 0, -1);
    expect(history.join('\n')).toContain('chatgate-attachment:');
    expect(history.join('\n')).not.toContain('base64');
    expect(sent()).toEqual(['seen it']);
  });

  it('gives the model a PDF and a CSV as text with their file names', async () => {
    const s = await start();
    tg.telegram.addFile('pdf-1', makePdf(['Quarterly report: invoice INV-2024-001 is overdue']), { fileName: 'report.pdf' });
    tg.telegram.pushMessage({ caption: 'summarise', document: { file_id: 'pdf-1', file_unique_id: 'u1', file_name: 'report.pdf', mime_type: 'application/pdf', file_size: 600 } });
    await tg.telegram.waitForCall('sendMessage');
    expect(lastUser(s).content).toMatch(/^summarise\n\n\[file report\.pdf \(PDF, [\d.]+ (bytes|KB), 1 page\)\]\nQuarterly report: invoice INV-2024-001 is overdue\n\[end of report\.pdf\]$/);
    tg.telegram.addFile('csv-1', Buffer.from('order,total\nORD-48213-XK,$1299.00\n'), { fileName: 'orders.csv' });
    tg.telegram.pushMessage({ document: { file_id: 'csv-1', file_unique_id: 'u2', file_name: 'orders.csv', mime_type: 'text/csv', file_size: 34 } });
    await tg.telegram.waitForCall('sendMessage', 2);
    expect(messageText(lastUser(s))).toContain('[file orders.csv (text, 34 bytes)]\norder,total\nORD-48213-XK,$1299.00');
  });

  it('transcribes a voice message: the transcript is what the model sees and what the transcript stream keeps', async () => {
    const s = await start();
    s.llm.setTranscriber((request) => ({ text: `please book table ${request.bytes.length}` }));
    tg.telegram.addFile('voice-1', oggBytes(128));
    tg.telegram.pushMessage({ voice: { file_id: 'voice-1', file_unique_id: 'v1', duration: 2, mime_type: 'audio/ogg', file_size: 128 } });
    await tg.telegram.waitForCall('sendMessage');
    expect(s.llm.transcriptions).toMatchObject([{ model: 'whisper-1', mimeType: 'audio/ogg', fileName: expect.stringMatching(/^voice-\d+\.ogg$/) }]);
    expect(lastUser(s).content).toBe('[voice message, transcribed]\nplease book table 128');
    const transcript = await readTranscript(s.t.redis, sessionKeys('telegram:42', s.t.keyPrefix));
    expect(transcript.some((entry) => entry.type === 'message' && messageText(entry.message).includes('please book table 128'))).toBe(true);
  });

  it('refuses a file over the limit before downloading it, says so, and stores nothing', async () => {
    const s = await start({ CHATGATE_MAX_ATTACHMENT_BYTES: '2048' });
    tg.telegram.addFile('big-1', Buffer.alloc(10));
    tg.telegram.pushMessage({ caption: 'read this', document: { file_id: 'big-1', file_unique_id: 'b1', file_name: 'big.pdf', mime_type: 'application/pdf', file_size: 5000 } });
    await tg.telegram.waitForCall('sendMessage');
    expect(sent()[0]).toBe('"big.pdf" is 4.9 KB; the limit is 2 KB, so it was not read. Please send a smaller file (or paste the part that matters as text).');
    expect(tg.telegram.callsOf('getFile')).toEqual([]);
    expect(await attachmentKeys(s)).toEqual([]);
    expect(await s.t.redis.llen(sessionKeys('telegram:42', s.t.keyPrefix).inbox)).toBe(0);
    expect(s.agentRequests()).toEqual([]);
  });

  it('refuses a file the Bot API will not serve (over 20 MB) with the same clear message', async () => {
    const s = await start({ CHATGATE_MAX_ATTACHMENT_BYTES: String(50 * 1024 * 1024) });
    tg.telegram.addFile('huge-1', Buffer.alloc(10), { reportedSize: 25 * 1024 * 1024 });
    tg.telegram.pushMessage({ document: { file_id: 'huge-1', file_unique_id: 'h1', file_name: 'movie-notes.txt', mime_type: 'text/plain' } });
    await tg.telegram.waitForCall('sendMessage');
    expect(sent()[0]).toContain('"movie-notes.txt" is over the limit');
    expect(tg.telegram.downloads).toEqual([]);
    expect(await attachmentKeys(s)).toEqual([]);
  });

  it('answers a type nothing reads by naming what is supported, and voice when transcription is off', async () => {
    const s = await start({ CHATGATE_TRANSCRIBE_MODEL: '' });
    tg.telegram.pushMessage({ document: { file_id: 'doc-1', file_unique_id: 'd1', file_name: 'letter.docx', mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', file_size: 900 } });
    await tg.telegram.waitForCall('sendMessage');
    expect(sent()[0]).toBe('"letter.docx" is a kind of file I cannot read. I can read images (JPEG, PNG, GIF, WebP), PDFs and text files (txt, md, csv, json, source code).');
    tg.telegram.pushMessage({ voice: { file_id: 'voice-2', file_unique_id: 'v2', duration: 2, mime_type: 'audio/ogg', file_size: 100 } });
    await tg.telegram.waitForCall('sendMessage', 2);
    expect(sent()[1]).toContain('transcription is off');
    expect(tg.telegram.callsOf('getFile')).toEqual([]);
    expect(await attachmentKeys(s)).toEqual([]);
    expect(s.agentRequests()).toEqual([]);
  });

  it('tells a session once that its model cannot see images, and the turn goes on with the text', async () => {
    const s = await start({ CHATGATE_VISION: 'false' });
    tg.telegram.addFile('p1', jpegBytes(64));
    tg.telegram.addFile('p2', jpegBytes(64));
    tg.telegram.pushMessage({ caption: 'first', photo: [{ file_id: 'p1', file_unique_id: 'p1', width: 9, height: 9, file_size: 64 }] });
    await tg.telegram.waitForCall('sendMessage', 2);
    tg.telegram.pushMessage({ caption: 'second', photo: [{ file_id: 'p2', file_unique_id: 'p2', width: 9, height: 9, file_size: 64 }] });
    await tg.telegram.waitForCall('sendMessage', 3);
    expect(sent().filter((text) => text.includes('cannot see images'))).toHaveLength(1);
    expect(sent().filter((text) => text === 'seen it')).toHaveLength(2);
    const requests = s.agentRequests();
    expect(JSON.stringify(requests.map((r) => r.messages))).not.toContain('image_url');
    expect(messageText(lastUser(s))).toMatch(/^second\n\[chatgate:image\] photo-\d+\.jpg \(this model cannot see images\)$/);
  });
});
