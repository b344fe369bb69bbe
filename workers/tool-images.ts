import { attachmentUrl, type AttachmentRef } from '../src/core/attachments.js';
import { TOOL_IMAGES_MARK, type ChatMessage, type ContentPart } from '../src/core/messages.js';
import { attachmentIdOf, storeAttachment, type AttachmentStoreOptions } from '../src/redis/attachments.js';
import type { RedisClient } from '../src/redis/client.js';
import type { ToolImage } from './tools/types.js';

/** The images one tool call of a round returned, stored as attachments. */
export interface CallImages {
  tool: string;
  callId: string;
  images: readonly AttachmentRef[];
}

/**
 * Stores the images a tool call returned the way user attachments are stored (the session's
 * attachment keys, with their TTL), under ids fixed by the turn and the call: a resumed round
 * stores the same bytes under the same references.
 */
export async function storeToolImages(redis: RedisClient, sessionId: string, turnId: string, callId: string, images: readonly ToolImage[], options: AttachmentStoreOptions): Promise<AttachmentRef[]> {
  return Promise.all(images.map(async (image, index) => {
    const stored = await storeAttachment(redis, sessionId, attachmentIdOf(`${turnId}:${callId}`, index), Buffer.from(image.data, 'base64'), options);
    return { id: stored.id, mimeType: image.mimeType, fileName: `${callId}-${index + 1}` };
  }));
}

/**
 * The message that shows the model the images of a round's tool results. Chat-completions tool
 * messages carry text only, so the round adds this one user message after its tool messages; each
 * call's images follow a text part that says they are tool output, not something the user sent
 * (opening with {@link TOOL_IMAGES_MARK}: compaction and `/retry` know it is no user's message).
 * Its image parts are attachment references: the request inlines them for a vision model and
 * gives any other model the placeholder (workers/attachments.ts `inline`).
 * @returns null when no call returned an image.
 */
export function toolImagesMessage(calls: readonly CallImages[]): Extract<ChatMessage, { role: 'user' }> | null {
  const content: ContentPart[] = [];
  for (const call of calls) {
    if (call.images.length === 0) continue;
    content.push({ type: 'text', text: `${TOOL_IMAGES_MARK} Images returned by tool ${call.tool} (call ${call.callId}), not sent by the user:` });
    for (const image of call.images) content.push({ type: 'image_url', image_url: { url: attachmentUrl(image) } });
  }
  return content.length === 0 ? null : { role: 'user', content };
}
