import type { InboundMessage } from '../src/core/inbound.js';
import type { ChatMessage } from '../src/core/messages.js';
import { StaleCommitError } from '../src/errors.js';
import { steerInbox } from '../src/redis/inbox.js';
import { toEntry } from '../src/redis/session-store.js';
import { bringsImage, NO_VISION_NOTICE, transcriptFiles } from './attachments.js';
import { toUserMessage, unansweredReplay } from './model-request.js';
import { buildRequest, ensureLease, limitsOf, messageEvent, type Loop } from './turn-loop.js';

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

/**
 * Steering: the messages that arrived for this session while its turn ran, in `steer` mode, join the
 * turn now — between two rounds, before the next model call — and go into the projection in order.
 * The take moves them into the processing list under the lease (scripts/steer-inbox-4.lua); a crash
 * after it leaves them there for the retried turn, which puts them in the projection once.
 * @returns how many joined.
 */
export async function steerIn(loop: Loop): Promise<number> {
  await ensureLease(loop, 'steer');
  const steered = await steerInbox(loop.deps.redis, loop.deps.store.keys(loop.turn.sessionId), loop.turn.fence);
  if (steered === null) throw new StaleCommitError(loop.turn.sessionId, 'the session lease was lost before messages could join the turn');
  if (steered.length === 0) return 0;
  loop.items.push(...steered);
  await appendInbound(loop);
  loop.log.info({ steered: steered.length, calls: loop.calls }, 'messages joined the running turn (steer)');
  return steered.length;
}

/** The user messages of fresh inbound messages, their files read; what could not be read is told in the turn's notices. */
async function userMessagesOf(loop: Loop, fresh: InboundMessage[]): Promise<ChatMessage[]> {
  const reader = loop.deps.attachments;
  if (!reader) return fresh.map((item) => toUserMessage(item));
  const users: ChatMessage[] = [];
  for (const item of fresh) {
    const files = await reader.read(loop.turn.sessionId, item, loop.turn.callScope);
    loop.notices.push(...files.notices);
    users.push(toUserMessage(item, files));
  }
  if (!reader.vision && fresh.some(bringsImage) && (await reader.firstVisionNotice(loop.turn.sessionId))) loop.notices.push(NO_VISION_NOTICE);
  return users;
}
