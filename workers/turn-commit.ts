import { answeredIds, type OutboundMessage } from '../src/core/inbound.js';
import { replyJobId } from '../src/queue/names.js';
import type { StoredEntry } from '../src/redis/session-store.js';
import type { UsageDelta } from '../src/redis/usage.js';
import { clearSteps, messageEvent, outbound, type Loop } from './turn-loop.js';

/** The turn's last model call, when it answered: committed by {@link finish} with the replies. */
export interface FinalCall {
  entry: StoredEntry;
  usage: UsageDelta;
  meta: { lastPromptTokens: number; appendedTokensSince: number; overheadTokens: number };
  /** Prompt tokens the provider billed for the call (recorded on the answer's transcript entry). */
  promptTokens?: number;
}

/**
 * The last commit of a turn: the answer (if any), replies and notices into the outbox, the
 * processing list deleted — one atomic, lease-fenced commit. `refusal`: `notice` answers in place
 * of a reply because a spend limit holds. @returns the replies committed.
 */
export async function finish(loop: Loop, final: FinalCall | null, notice: string | null, replyText = '', refusal?: OutboundMessage['refusal']): Promise<OutboundMessage[]> {
  // The last call's budget settle may still be in flight: its notices (a limit reached) go with this commit.
  await loop.turn.callScope.turn?.settling;
  const ids = loop.replyIds;
  const replyId = replyJobId(ids, 'reply');
  const outbox: OutboundMessage[] = [];
  // The API answers a request with its reply alone: the budget's notices go at the end of it (channels/openai-api/README.md).
  const appended = replyText && loop.items[loop.items.length - 1]!.channel === 'api' ? loop.budgetNotices : [];
  // Everything the turn sends names the messages it follows, the decisions' that resumed the turn included (the
  // transcript has no such message): an API request takes the answer to its own message only, never a stray notice.
  const answers = answeredIds(loop.items);
  if (replyText) outbox.push({ ...outbound(loop, replyId, [replyText, ...appended].join('\n\n'), 'reply', true), answers });
  const others = loop.notices.filter((text) => !appended.includes(text));
  // A refusal is the answer: it goes first, in place of the reply.
  const notices = notice && refusal ? [notice, ...others] : [...others, ...(notice ? [notice] : [])];
  // Without an answer, the first notice stands in for it and is the one threaded to the asker.
  notices.forEach((text, k) => outbox.push({ ...outbound(loop, replyJobId(ids, 'notice', k), text, 'notice', !replyText && k === 0), answers }));
  // The notice answering in place of the reply ends the turn's stream (the web chat's live bubble).
  if (!replyText && outbox[0]) outbox[0].liveReplyId = replyId;
  if (!replyText && notice && refusal) outbox[0]!.refusal = refusal;
  // Notices held for this reply (an idle compaction's) come after it, never in its place, and are cleared with it.
  const held = loop.turn.meta.heldNotices;
  held.forEach((text, k) => outbox.push({ ...outbound(loop, replyJobId(ids, 'notice', notices.length + k), text, 'notice', false), answers }));
  const cleared = held.length > 0 ? { heldNotices: [] } : {};
  const change = { outbox, finishTurn: true };
  // The answer's entry names its reply, so a history view can tell it from the same reply seen live.
  const answered = replyText ? { replyId } : {};
  if (final) await loop.turn.append([final.entry], { ...change, transcript: [{ ...messageEvent(final.entry, undefined, final.promptTokens), ...answered }], usage: final.usage, meta: { ...final.meta, ...cleared } });
  else await loop.turn.commitOnly({ ...change, meta: cleared });
  await clearSteps(loop);
  loop.log.debug({ calls: loop.calls, messages: loop.items.length, replies: outbox.length }, 'turn committed');
  return outbox;
}
