import { describe, expect, it } from 'vitest';
import { telegramDraftId } from '../../channels/telegram/live-reply.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readUsage } from '../../src/redis/usage.js';
import type { FakeHandler } from '../fakes/openai-server.js';
import type { Stack } from '../helpers/stack.js';
import { useTelegramFixture } from '../helpers/telegram-stack.js';

const tg = useTelegramFixture();

const GROUP = -100555;
const ANSWER = Array.from({ length: 40 }, (_, i) => `part${i}`).join(' ') + ' and **done**.';
const FINAL_HTML = ANSWER.replace('**done**', '<b>done</b>');

async function start(handler: FakeHandler): Promise<Stack> {
  return tg.start({ handler, channel: { groupTrigger: 'always' }, env: { CHATGATE_LIVE_REPLY_EDIT_INTERVAL_MS: '250' }, worker: { liveReplyPublishIntervalMs: 20 } });
}

const sayPrivately = (text: string) => tg.telegram.pushMessage({ text, chat: { id: 42, type: 'private', first_name: 'Ada' } });
const sayInGroup = (text: string) => tg.telegram.pushMessage({ text, chat: { id: GROUP, type: 'group', title: 'Team' } });
const until = tg.until;
const groupCalls = (method: string) => tg.telegram.callsOf(method).filter((call) => String(call.params.chat_id) === String(GROUP));
/** The group message holding the final reply, once it is there. */
const finalInGroup = () => [...tg.telegram.messages].find(([key, text]) => key.startsWith(`${GROUP}:`) && text === FINAL_HTML);

describe('streaming replies on Telegram', () => {
  it('private chat: drafts grow in order under one draft id, then one final formatted message; usage as without streaming', async () => {
    const s = await start(() => ({ content: ANSWER, pieceDelayMs: 8 }));
    sayPrivately('tell me');
    await until(() => tg.telegram.callsOf('sendMessage').length >= 1);
    const drafts = tg.telegram.callsOf('sendMessageDraft');
    expect(drafts.length).toBeGreaterThan(0);
    const draftTexts = drafts.map((call) => String(call.params.text));
    for (let i = 1; i < draftTexts.length; i++) expect(draftTexts[i]!.startsWith(draftTexts[i - 1]!)).toBe(true);
    for (const text of draftTexts) expect(ANSWER.startsWith(text)).toBe(true);
    expect(new Set(drafts.map((call) => call.params.draft_id)).size).toBe(1);
    expect(drafts.every((call) => call.params.parse_mode === undefined)).toBe(true);
    const sent = tg.telegram.callsOf('sendMessage');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.params).toMatchObject({ chat_id: '42', text: FINAL_HTML, parse_mode: 'HTML' });
    expect(tg.telegram.callsOf('editMessageText')).toHaveLength(0);
    expect(drafts.every((call) => call.atMs <= sent[0]!.atMs)).toBe(true);
    const usage = await readUsage(s.t.redis, sessionKeys('telegram:42', s.t.keyPrefix));
    expect(usage).toMatchObject({ calls: 1, promptTokens: s.llm.requests[0]!.promptTokens });
  });

  it('group: one message edited in place while written, then edited into the final formatted reply (nothing sent twice)', async () => {
    await start(() => ({ content: ANSWER, pieceDelayMs: 12 }));
    sayInGroup('tell the team');
    await until(() => finalInGroup() !== undefined);
    const sends = groupCalls('sendMessage');
    expect(sends).toHaveLength(1);
    expect(String(sends[0]!.params.text)).toMatch(/ ▍$/);
    expect(sends[0]!.params.parse_mode).toBeUndefined();
    const messageId = String(finalInGroup()![0].split(':')[1]);
    const edits = groupCalls('editMessageText');
    expect(edits.length).toBeGreaterThanOrEqual(1);
    expect(edits.every((call) => String(call.params.message_id) === messageId)).toBe(true);
    // The partial edits show growing text; the last edit is the final reply in HTML.
    const partials = edits.slice(0, -1).map((call) => String(call.params.text).replace(/ ▍$/, ''));
    for (let i = 1; i < partials.length; i++) expect(partials[i]!.startsWith(partials[i - 1]!)).toBe(true);
    expect(edits.at(-1)!.params).toMatchObject({ text: FINAL_HTML, parse_mode: 'HTML' });
    expect(tg.telegram.callsOf('sendMessageDraft')).toHaveLength(0);
  });

  it('group: a 429 on the edits slows them down and the final text still arrives, once', async () => {
    await start(() => ({ content: ANSWER, pieceDelayMs: 15 }));
    tg.telegram.failNext('editMessageText', { errorCode: 429, description: 'Too Many Requests: retry after 1', retryAfterSeconds: 1 }, { times: 2, window: true });
    sayInGroup('tell the team');
    await until(() => finalInGroup() !== undefined);
    const edits = groupCalls('editMessageText');
    expect(edits.length).toBeGreaterThanOrEqual(3);
    // Like the real Bot API, the fake refuses calls made before a retry_after has passed: no partial edit was.
    expect(tg.telegram.earlyCalls.filter((call) => call.params.parse_mode === undefined)).toEqual([]);
    expect(groupCalls('sendMessage')).toHaveLength(1);
    expect(edits.at(-1)!.params).toMatchObject({ text: FINAL_HTML, parse_mode: 'HTML' });
  });

  it('group: the final edit rate limited is retried by the outbound job, and lands', async () => {
    await start(() => ({ content: ANSWER, pieceDelayMs: 5 }));
    tg.telegram.failNext('editMessageText', { errorCode: 429, description: 'Too Many Requests: retry after 1', retryAfterSeconds: 1 }, { when: (params) => params.parse_mode === 'HTML' });
    sayInGroup('tell the team');
    await until(() => finalInGroup() !== undefined);
    const htmlEdits = groupCalls('editMessageText').filter((call) => call.params.parse_mode === 'HTML');
    expect(htmlEdits).toHaveLength(2);
    expect(groupCalls('sendMessage')).toHaveLength(1);
  });

  it('group: a long reply edits chunk 1 into the partial message and sends the rest, each under 4096', async () => {
    const long = Array.from({ length: 400 }, (_, i) => `Line ${i}: ${'word '.repeat(8)}`).join('\n');
    await start(() => ({ content: long, pieces: long.match(/[\s\S]{1,400}/g)!, pieceDelayMs: 5 }));
    sayInGroup('everything please');
    await until(() => groupCalls('sendMessage').some((call) => String(call.params.text).includes('Line 399:')));
    const finalEdit = groupCalls('editMessageText').filter((call) => call.params.parse_mode === 'HTML');
    expect(finalEdit).toHaveLength(1);
    expect(String(finalEdit[0]!.params.text).startsWith('Line 0:')).toBe(true);
    const chunks = [String(finalEdit[0]!.params.text), ...groupCalls('sendMessage').slice(1).map((call) => String(call.params.text))];
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((text) => text.length <= 4096)).toBe(true);
    expect(chunks.join('\n').replace(/\s+/g, ' ').trim()).toBe(long.replace(/\s+/g, ' ').trim());
    // Partial previews of an over-long text show its latest part within the limit.
    expect(groupCalls('editMessageText').every((call) => String(call.params.text).length <= 4096)).toBe(true);
  });

  it('group: the text of a round that turned into tool calls does not stay: deleted or replaced by the answer', async () => {
    await start((request) => request.index === 0
      ? { content: 'Let me look at the clock for you first.', toolCalls: [{ name: 'current_time', arguments: {} }], pieceDelayMs: 15 }
      : { content: ANSWER, pieceDelayMs: 5 });
    sayInGroup('what time is it');
    await until(() => finalInGroup() !== undefined);
    const shown = [...groupCalls('sendMessage'), ...groupCalls('editMessageText')].map((call) => String(call.params.text));
    expect(shown.some((text) => /^Let\b/.test(text))).toBe(true);
    // The preview replies to the asker, like the final reply does in groups.
    expect(groupCalls('sendMessage').every((call) => call.params.reply_parameters !== undefined)).toBe(true);
    const remaining = [...tg.telegram.messages].filter(([key]) => key.startsWith(`${GROUP}:`)).map(([, text]) => text);
    expect(remaining).toEqual([FINAL_HTML]);
  });

  it('falls back to a plain call when the endpoint cannot stream: no drafts, one final message', async () => {
    const s = await start(() => ({ content: ANSWER }));
    s.llm.setStreaming('refuse');
    sayPrivately('tell me');
    await until(() => tg.telegram.callsOf('sendMessage').length >= 1);
    expect(tg.telegram.callsOf('sendMessage')[0]!.params.text).toBe(FINAL_HTML);
    expect(tg.telegram.callsOf('sendMessageDraft')).toHaveLength(0);
    expect(s.llm.requests.map((r) => r.stream)).toEqual([true, false]);
  });

  it('draft ids are stable per stream and never zero', () => {
    expect(telegramDraftId('reply-abc-0')).toBe(telegramDraftId('reply-abc-0'));
    for (const id of ['', 'a', 'reply-0', 'x'.repeat(500)]) expect(telegramDraftId(id)).not.toBe(0);
  });
});
