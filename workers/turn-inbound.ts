import type { InboundMessage } from '../src/core/inbound.js';
import type { ChatMessage } from '../src/core/messages.js';
import { toEntry } from '../src/redis/session-store.js';
import { bringsImage, NO_VISION_NOTICE, transcriptFiles } from './attachments.js';
import { toUserMessage, unansweredReplay } from './request.js';
import { buildRequest, limitsOf, messageEvent, type Loop } from './turn-loop.js';

/** The turn's messages not yet in the projection (events, which the model never sees, left out). */
export function freshItems(loop: Loop): InboundMessage[] {
  const applied = new Set(loop.turn.meta.turnInboundIds);
  return loop.items.filter((item) => !applied.has(item.id) && item.event === undefined);
}

/** Puts the turn's fresh messages into the projection and the transcript, in one commit. */
export async function appendInbound(loop: Loop): Promise<void> {
  const fresh = freshItems(loop);
  const last = loop.items[loop.items.length - 1]!;
  const route = { channel: last.channel, chatId: last.chatId, ...(last.threadId ? { threadId: last.threadId } : {}) };
  const users = await userMessagesOf(loop, fresh);
  const replayed = unansweredReplay(loop.turn.messages(), users);
  const entries = users.slice(replayed).map((user) => toEntry(user, loop.deps.compressor.tokenCounter, loop.deps.llm.model));
  if (entries.length === 0 && replayed === 0) return;
  const transcript = entries.map((entry, k) => ({ ...messageEvent(entry, fresh[replayed + k]!.id), ...transcriptFiles(fresh[replayed + k]!) }));
  // With no provider report yet, the next request is counted from its parts: record the system prompt and tools too (every surface reads it).
  const overhead = loop.turn.meta.lastPromptTokens === 0 ? { overheadTokens: (await buildRequest(loop)).overhead } : {};
  await loop.turn.append(entries, { transcript, meta: { turnInboundIds: loop.items.map((item) => item.id), route, limits: limitsOf(loop), ...overhead } });
}

/** The user messages of fresh inbound messages, their files read; what could not be read is told in the turn's notices. */
async function userMessagesOf(loop: Loop, fresh: InboundMessage[]): Promise<ChatMessage[]> {
  const reader = loop.deps.attachments;
  if (!reader) return fresh.map((item) => toUserMessage(item));
  const users: ChatMessage[] = [];
  for (const item of fresh) {
    const files = await reader.read(loop.turn.sessionId, item);
    loop.notices.push(...files.notices);
    users.push(toUserMessage(item, files));
  }
  if (!reader.vision && fresh.some(bringsImage) && (await reader.firstVisionNotice(loop.turn.sessionId))) loop.notices.push(NO_VISION_NOTICE);
  return users;
}
