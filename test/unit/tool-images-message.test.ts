/**
 * The user message a tool round adds to show the model its images (workers/tool-images.ts) belongs
 * to its round: the latest user message, the last exchange, tool-call groups, compaction and the
 * session replay all treat it so, while a user's text that merely imitates its mark stays the user's.
 */
import { describe, expect, it } from 'vitest';
import { attachmentUrl, placeholderOlderImages } from '../../src/core/attachments.js';
import { lastExchange } from '../../src/core/last-exchange.js';
import { alignToGroupStart, groupEnd, isToolImagesMessage, lastUserIndex, TOOL_IMAGES_MARK, type ChatMessage } from '../../src/core/messages.js';
import { IMAGE_PART_TOKENS, TokenCounter } from '../../src/core/tokens.js';
import { replayTranscript } from '../../src/redis/session-replay.js';
import { toolImagesMessage } from '../../workers/tool-images.js';
import { chained } from '../helpers/compaction.js';
import { chatHistory } from '../helpers/histories.js';
import { vagueSummarizer } from '../helpers/summarizers.js';

const userImage = { id: 'u-0', mimeType: 'image/jpeg', fileName: 'photo.jpg' };
const toolImage = { id: 't-0', mimeType: 'image/png', fileName: 'call_1-1' };
const shown = toolImagesMessage([{ tool: 'mcp__everything__get-tiny-image', callId: 'call_1', images: [toolImage] }])!;

/** The user sends a photo, the model calls an image tool, the round adds its images message, the model answers. */
function exchange(): ChatMessage[] {
  return [
    { role: 'user', content: [{ type: 'text', text: 'compare this with the tool image' }, { type: 'image_url', image_url: { url: attachmentUrl(userImage) } }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'mcp__everything__get-tiny-image', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '[image image/png, 93 B: image 1 of this call, after the tool results]' },
    shown,
  ];
}

describe('the images message of a tool round', () => {
  it('is no user message: the latest one and the last exchange stay the user\'s', () => {
    const messages = exchange();
    expect(isToolImagesMessage(messages[3], messages[2]!.role)).toBe(true);
    expect(lastUserIndex(messages)).toBe(0);
    expect(lastExchange(messages)).toEqual({ start: 0, userTexts: ['compare this with the tool image'], holdsSummary: false });
    // A user's words imitating the mark, not right after a tool result, are the user's.
    const imitation: ChatMessage = { role: 'user', content: [{ type: 'text', text: `${TOOL_IMAGES_MARK} hello` }, { type: 'image_url', image_url: { url: attachmentUrl(userImage) } }] };
    const later = [...messages, { role: 'assistant', content: 'done' } as ChatMessage, imitation];
    expect(isToolImagesMessage(imitation, 'assistant')).toBe(false);
    expect(lastUserIndex(later)).toBe(5);
  });

  it('moves with its tool-call group', () => {
    const messages = exchange();
    expect(groupEnd(messages, 1)).toBe(4);
    expect(alignToGroupStart(messages, 3)).toBe(1);
  });

  it('keeps both the user\'s image and the tool\'s in the current exchange, and counts its image parts', () => {
    const messages = exchange();
    expect(placeholderOlderImages(messages)).toBe(messages);
    const tokens = new TokenCounter();
    expect(tokens.messageTokens(shown)).toBeGreaterThan(IMAGE_PART_TOKENS);
  });

  it('survives a forced compaction with its round, the user\'s ask still last among user messages', async () => {
    const history = [...chatHistory(8), ...exchange(), { role: 'assistant', content: 'They differ in size.' } as ChatMessage];
    const result = await chained({ contextWindow: 16_000, summarizer: vagueSummarizer() }).compress(history, { force: true });
    expect(result.outcome).toBe('compacted');
    const out = result.messages;
    const at = out.findIndex((m) => m === shown || JSON.stringify(m) === JSON.stringify(shown));
    expect(at).toBeGreaterThan(0);
    expect(out[at - 1]).toMatchObject({ role: 'tool', tool_call_id: 'call_1' });
    expect(out[at - 2]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_1' }] });
    expect(out[at - 3]).toEqual(exchange()[0]);
    expect(lastUserIndex(out)).toBe(at - 3);
  });

  it('starts no turn in the session replay', () => {
    const entries = [...exchange(), { role: 'assistant', content: 'They differ.' } as ChatMessage].map((message, k) => ({ id: `${k}-0`, type: 'message' as const, message, tokens: 10, atMs: k }));
    const replay = replayTranscript(entries, 0, { model: 'gpt-4o-mini', summaryModel: 'gpt-4o-mini', contextWindow: 16_000, reservedOutputTokens: 0 });
    expect(replay.fillHistory.map((point) => point.turn)).toEqual([1, 1]);
  });
});
