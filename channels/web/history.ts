/**
 * GET /api/chat/:id/history: a web conversation's past messages, both sides, read from the
 * session's transcript in Redis (never from the page's memory), a page at a time, newest page
 * first. The transcript is read through a function the gateway passes ({@link TranscriptSource}),
 * so this channel knows nothing of how the transcript is stored.
 *
 * Reload without duplicates: the answer also carries `after`, the reply-stream cursor read just
 * before the transcript, where the page opens its SSE stream (or long poll). Every reply delivered
 * before that cursor was committed to the transcript before the read, so it is in the history; a
 * reply delivered after it comes live, and if its answer was committed before the read too (the
 * moment between commit and delivery), its `replyId` names the history entry the page already shows.
 */
import type { Context } from 'hono';
import { CHATGATE_MARK } from '../../src/core/messages.js';
import { sessionKeyOf, type MessageChoice } from '../../src/core/inbound.js';
import type { OutageLog } from '../../src/log.js';
import type { WebReply } from './conversations.js';
import type { ReplyStore } from './reply-store.js';
import { STREAM_ID_RE } from './reply-wakeups.js';

/** Most messages one history page holds (`limit`). */
export const MAX_HISTORY_LIMIT = 100;
/** Messages per page when `limit` is not given. */
export const DEFAULT_HISTORY_LIMIT = 50;
/** Transcript entries read per round trip, and most read for one page (tool rounds are skipped). */
const BATCH = 200;
const MAX_SCANNED = 5_000;
const ATTACHMENTS_RE = /\n?\[attachments: ([^\]\n]*)\]$/;

/** The fields of a transcript entry the history reads (a structural subset of the transcript's entries). */
export interface TranscriptRow {
  /** Stream id `<ms>-<n>`. */
  id: string;
  type: string;
  atMs: number;
  message?: { role: string; content?: unknown; tool_calls?: readonly unknown[] };
  /** On a user message: the inbound message id (`web:<conversationId>:<clientMessageId>`). */
  inboundId?: string;
  /** On a model's final answer: the id of the reply delivered for it (the live reply's `replyId`). */
  replyId?: string;
  /** On a user message, when recorded: the files that came with it. */
  attachments?: ReadonlyArray<{ kind: string; fileName?: string }>;
  /** On a user message with files: the user's own words (the message also holds the files' text). */
  userText?: string;
}

/**
 * Reads a session's transcript backwards: up to `count` entries older than the stream id `before`
 * (exclusive; absent = from the newest), newest first.
 */
export type TranscriptSource = (sessionId: string, before: string | undefined, count: number) => Promise<readonly TranscriptRow[]>;

/** One message of the history, as the page receives it. */
export interface HistoryMessage {
  /** The user message's inbound id, or the answer's reply id; the transcript stream id when neither was recorded. */
  id: string;
  role: 'user' | 'assistant';
  text: string;
  format: 'markdown' | 'text';
  /** ms since epoch, when the transcript recorded it. */
  at: number;
  attachments?: Array<{ kind: string; fileName: string }>;
  /** A buffered reply's buttons (an approval question not decided by a press yet). */
  choices?: MessageChoice[];
}

/** One page of history. */
export interface HistoryPage {
  /** Oldest first. */
  messages: HistoryMessage[];
  /** The cursor of the next older page, or null when there is none. */
  before: string | null;
}

/** GET /api/chat/:id/history?before=&limit= — see the module comment and channels/web/README.md. */
export async function historyRoute(c: Context, deps: { store: ReplyStore; readTranscript?: TranscriptSource; log: OutageLog }): Promise<Response> {
  const conversationId = c.req.param('conversationId')!;
  const before = c.req.query('before');
  const limitParam = c.req.query('limit');
  if (before !== undefined && !STREAM_ID_RE.test(before)) return c.json({ error: '`before` must be a cursor from a previous history answer (`<ms>-<n>`)' }, 400);
  const limit = limitParam === undefined ? DEFAULT_HISTORY_LIMIT : Number(limitParam);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_HISTORY_LIMIT) return c.json({ error: `\`limit\` must be an integer from 1 to ${MAX_HISTORY_LIMIT} (got ${limitParam})` }, 400);
  try {
    // No transcript to read (a web channel outside a gateway): nothing, and no `after`, so the page replays the reply buffer.
    if (!deps.readTranscript) return c.json({ messages: [], before: null });
    // Newest page only: where live replies continue. Read before the transcript (see the module comment).
    const buffered = before === undefined ? await bufferedReplies(deps.store, conversationId) : undefined;
    const sessionId = sessionKeyOf({ channel: 'web', chatId: conversationId, userId: conversationId, chatType: 'private' });
    const page = await readHistoryPage(deps.readTranscript, sessionId, before, limit);
    if (!buffered) return c.json(page);
    return c.json({ ...withNotices(page, buffered.replies), after: buffered.next });
  } catch (err) {
    deps.log.warn({ err, conversationId }, 'web history not readable');
    return c.json({ error: 'history not available right now (the store could not be read); retry' }, 503);
  }
}

/**
 * Reads one page: walks the transcript backwards past tool rounds and compactions until `limit`
 * messages are found, then one further (so `before` is null exactly when nothing older is left).
 */
export async function readHistoryPage(read: TranscriptSource, sessionId: string, before: string | undefined, limit: number): Promise<HistoryPage> {
  const found: HistoryMessage[] = [];
  let cursor = before;
  let oldestKept = before;
  let scanned = 0;
  for (;;) {
    const rows = await read(sessionId, cursor, BATCH);
    for (const row of rows) {
      scanned++;
      cursor = row.id;
      const message = toHistoryMessage(row);
      if (!message) continue;
      // One more than asked: there is an older page, which starts after the last one we keep.
      if (found.length === limit) return { messages: found.reverse(), before: oldestKept ?? null };
      found.push(message);
      oldestKept = row.id;
    }
    if (rows.length < BATCH) return { messages: found.reverse(), before: null };
    // A very long run of tool entries: answer what was found, and let the page ask further back.
    if (scanned >= MAX_SCANNED) return { messages: found.reverse(), before: cursor ?? null };
  }
}

/** What the page shows of a transcript entry: user messages and final answers; tool rounds, notes and summaries are not. */
export function toHistoryMessage(row: TranscriptRow): HistoryMessage | undefined {
  const message = row.message;
  if (row.type !== 'message' || !message) return undefined;
  if (message.role === 'assistant') {
    if ((message.tool_calls?.length ?? 0) > 0) return undefined;
    const text = contentText(message.content).trim();
    if (text === '') return undefined;
    return { id: row.replyId ?? row.id, role: 'assistant', text, format: 'markdown', at: row.atMs };
  }
  if (message.role !== 'user') return undefined;
  const raw = contentText(message.content);
  if (raw.startsWith(CHATGATE_MARK)) return undefined;
  const { text, attachments } = splitAttachments(raw, row, message.content);
  return { id: row.inboundId ?? row.id, role: 'user', text, format: 'text', at: row.atMs, ...(attachments.length > 0 ? { attachments } : {}) };
}

/** The replies buffered now, and the reply-stream cursor after them. */
async function bufferedReplies(store: ReplyStore, conversationId: string): Promise<{ replies: WebReply[]; next: string }> {
  let page = await store.read(conversationId, undefined, { timeoutMs: 0 });
  const replies = [...page.replies];
  // A read returns at most one buffer's worth; read on until nothing is left (bounded).
  for (let k = 0; k < 10 && page.replies.length > 0; k++) {
    const next = await store.read(conversationId, page.next, { timeoutMs: 0 });
    if (next.replies.length === 0) break;
    replies.push(...next.replies);
    page = next;
  }
  return { replies, next: page.next };
}

/**
 * The newest page with the buffered replies the transcript does not hold — notices ("Stopped.", a
 * model failure, a compaction, an approval question with its buttons) and command answers — in time
 * order, so a reload shows what the chat showed. Only those since the page's oldest message (all of
 * them when nothing is older), and only while the conversation's reply buffer still holds them. A
 * reply edited since (a question decided by a press) shows its new text, without buttons.
 */
export function withNotices(page: HistoryPage, replies: readonly WebReply[]): HistoryPage {
  const inTranscript = new Set(page.messages.map((m) => m.id));
  const since = page.before === null ? -Infinity : (page.messages[0]?.at ?? Infinity);
  const edited = new Map(replies.filter((r) => r.edits).map((r) => [r.edits!, r]));
  const notices: HistoryMessage[] = replies
    .filter((r) => !r.edits && !inTranscript.has(r.replyId ?? r.id) && r.at >= since)
    .map((r) => {
      const edit = edited.get(r.id);
      if (edit) return { id: r.id, role: 'assistant', text: edit.text, format: edit.format, at: r.at };
      return { id: r.id, role: 'assistant', text: r.text, format: r.format, at: r.at, ...(r.choices ? { choices: r.choices } : {}) };
    });
  if (notices.length === 0) return page;
  // A stable merge: a notice after the transcript entries of its moment (the question it answers).
  const messages = [...page.messages, ...notices].map((m, k) => ({ m, k })).sort((a, b) => a.m.at - b.m.at || a.k - b.k).map(({ m }) => m);
  return { ...page, messages };
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { type?: string; text?: unknown }) => (part?.type === 'text' && typeof part.text === 'string' ? part.text : '')).filter(Boolean).join('\n');
}

/** The text without the `[attachments: …]` line the gateway adds, and the attachments it names. */
function splitAttachments(raw: string, row: TranscriptRow, content: unknown): { text: string; attachments: Array<{ kind: string; fileName: string }> } {
  if (row.attachments && row.attachments.length > 0) {
    // The message holds the documents' text and transcripts too: the page shows what the user wrote.
    return { text: row.userText ?? raw.replace(ATTACHMENTS_RE, ''), attachments: row.attachments.map((a) => ({ kind: a.kind, fileName: a.fileName ?? a.kind })) };
  }
  const images = Array.isArray(content) ? content.filter((part: { type?: string }) => part?.type === 'image_url').length : 0;
  const listed = raw.match(ATTACHMENTS_RE);
  const attachments = listed ? listed[1]!.split(', ').filter(Boolean).map((fileName) => ({ kind: 'file', fileName })) : [];
  for (let k = attachments.length; k < images; k++) attachments.push({ kind: 'photo', fileName: 'image' });
  return { text: listed ? raw.slice(0, listed.index) : raw, attachments };
}
