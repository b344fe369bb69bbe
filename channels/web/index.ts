/**
 * The web chat channel: a hono sub-app serving the chat page at `/chat` and a JSON API
 * (see channels/web/README.md): POST a message into a conversation, receive the replies by SSE
 * or long poll. Replies live in memory by default, or in Redis streams when `deps.redis` is given
 * (then any number of gateways serve the chat, and cursors survive restarts); the session state
 * lives in Redis like any other channel's.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { isCrossSiteWrite } from '../../src/monitor/request-origin.js';
import { ChannelError } from '../../src/errors.js';
import { createOutageLog, createSilentLogger, type Logger, type OutageLog } from '../../src/log.js';
import { CHANNEL_ERROR_CODES, type Channel, type ChatTarget, type InboundHandler, type OutgoingText, type SentMessage } from '../channel.js';
import type { RedisClient } from '../../src/redis/client.js';
import type { ConversationStoreOptions, WebReply } from './conversations.js';
import { DraftHub, type DraftDelta } from './drafts.js';
import { historyRoute, type TranscriptSource } from './history.js';
import { mountChatPage } from './page.js';
import { createRedisReplyStore } from './redis-replies.js';
import { ID_RE, postMessage } from './post-message.js';
import { pressChoice } from './press.js';
import { isMultipart, uploadSlots } from './upload.js';
import { createReadSlots } from './read-slots.js';
import { formatBytes } from '../../src/core/attachments.js';
import type { Attachment } from '../../src/core/inbound.js';
import { createMemoryReplyStore, isCursor, type ReplyHint, type ReplyStore } from './reply-store.js';

/** Options of {@link createWebChannel}. */
export interface WebChannelOptions extends ConversationStoreOptions {
  /** Page title. Default `chatgate`. */
  title?: string;
  /** Path prefix under which the app is mounted (for the page's API URLs). Default ``. */
  basePath?: string;
  /** Longest message chunk sent to the page, in code points. Default 8000. */
  maxMessageLength?: number;
  /** Longest accepted request body, in bytes. Default 65 536. */
  maxBodyBytes?: number;
  /** Largest file of a multipart post, bytes (the gateway's attachment limit). Default 10 MB. */
  maxUploadBytes?: number;
  /** Most file uploads received at once (each held in memory until answered); more get 503 `busy`. Default 8. */
  maxConcurrentUploads?: number;
  /** Most event streams and long polls one client address holds open at once; one more gets 429 `too_many_reads`. Default 32. */
  maxReadsPerClient?: number;
  /** Default and maximum wait of a long poll, in ms. Default 25 000 and 60 000. */
  longPollTimeoutMs?: number;
  maxLongPollTimeoutMs?: number;
  /** SSE keep-alive comment period, in ms. Default 15 000. */
  keepAliveMs?: number;
  /** Renewal period of the typing hint, in ms. Default 4000. */
  typingIntervalMs?: number;
  /** Reconnection delay the SSE stream asks `EventSource` to use (`retry:`), in ms. Default 1000. */
  sseRetryMs?: number;
}

/** What the web chat needs from its host. */
export interface WebChannelDeps {
  log?: Logger;
  /**
   * Middleware run before `/chat` and every `/api/chat/*` route, e.g. the monitor's
   * `createAccessGuard({ host, monitorToken, tokenOnLoopback: false })`. Default none (open).
   * The page's API calls and SSE carry its cookie, so a cookie-based guard covers them.
   */
  guard?: MiddlewareHandler;
  /**
   * When given, replies go to one Redis stream per conversation (see `redis-replies.ts`): every
   * gateway on this Redis can deliver them and serve the chat. Default: in memory (one gateway).
   */
  redis?: RedisClient;
  /** Key prefix of the Redis streams (the gateway's). Default `cg:`. */
  keyPrefix?: string;
  /**
   * Reads a session's transcript backwards, for `GET /api/chat/:id/history` (see history.ts); the
   * gateway passes one over its Redis. Without it the history is empty and the page replays the reply buffer.
   */
  readTranscript?: TranscriptSource;
}

/** Resolved {@link WebChannelOptions}. */
export type ResolvedWebChannelOptions = Required<WebChannelOptions>;

/** The web chat channel: mount {@link WebChannel.app} on the gateway's HTTP server. */
export interface WebChannel extends Channel {
  readonly name: 'web';
  /** Routes: GET /, /chat (and its assets, the favicon), POST and GET /api/chat/:id/messages, POST /api/chat/:id/presses, GET /api/chat/:id/events and /history. */
  readonly app: Hono;
  /** Reads waiting for a reply right now: long polls, and SSE streams between replies. */
  waitingReads(): number;
}

const DEFAULTS = {
  title: 'chatgate',
  basePath: '',
  maxMessageLength: 8_000,
  maxBodyBytes: 65_536,
  maxUploadBytes: 10 * 1024 * 1024,
  maxConcurrentUploads: 8,
  maxReadsPerClient: 32,
  longPollTimeoutMs: 25_000,
  maxLongPollTimeoutMs: 60_000,
  keepAliveMs: 15_000,
  typingIntervalMs: 4_000,
  sseRetryMs: 1_000,
  maxRepliesPerConversation: 200,
  maxConversations: 10_000,
} satisfies ResolvedWebChannelOptions;


/** Creates the web chat channel. */
export function createWebChannel(deps: WebChannelDeps = {}, options: WebChannelOptions = {}): WebChannel {
  const resolved: ResolvedWebChannelOptions = { ...DEFAULTS, ...options };
  const log = (deps.log ?? createSilentLogger()).child({ component: 'channel', channel: 'web' });
  const store: ReplyStore = deps.redis
    ? createRedisReplyStore({ redis: deps.redis }, { keyPrefix: deps.keyPrefix, maxRepliesPerConversation: resolved.maxRepliesPerConversation })
    : createMemoryReplyStore(resolved);
  const state: { onMessage?: InboundHandler } = {};
  const uploads = new Map<string, Buffer>();
  const drafts = new DraftHub();
  const app = createApp({ store, drafts }, () => state.onMessage, resolved, log, { guard: deps.guard, readTranscript: deps.readTranscript, uploads });

  return {
    name: 'web',
    maxMessageLength: resolved.maxMessageLength,
    lengthUnit: 'codepoints',
    formatting: 'markdown',
    typingIntervalMs: resolved.typingIntervalMs,
    localDrafts: true,
    sendsOncePerDeliveryId: store.appendsOncePerDeliveryId,
    app,
    waitingReads: () => store.waiting(),
    async start(onMessage) {
      state.onMessage = onMessage;
    },
    async stop() {
      state.onMessage = undefined;
      store.closeAll();
    },
    async send(target: ChatTarget, message: OutgoingText): Promise<SentMessage> {
      if (!ID_RE.test(target.chatId)) throw new ChannelError(`send failed for web:${target.chatId} (not a conversation id)`, { retryable: false, code: CHANNEL_ERROR_CODES.permanent });
      try {
        const { deliveryId, liveReplyId, choices } = message;
        const reply = await store.append(target.chatId, message.text, message.mode === 'formatted' ? 'markdown' : 'text', { deliveryId, liveReplyId, choices });
        if (message.liveReplyId) drafts.close(target.chatId, message.liveReplyId);
        return { messageId: reply.id };
      } catch (err) {
        throw new ChannelError(`send failed for web:${target.chatId} (reply store)`, { retryable: true, code: CHANNEL_ERROR_CODES.transient, cause: err });
      }
    },
    async closeChoices(target, messageId, message) {
      try {
        // Once per question (the store keeps the first edit): a later decision shown leaves the first.
        await store.append(target.chatId, message.text, message.mode === 'formatted' ? 'markdown' : 'text', { edits: messageId });
      } catch (err) {
        throw new ChannelError(`edit failed for web:${target.chatId} (reply store)`, { retryable: true, code: CHANNEL_ERROR_CODES.transient, cause: err });
      }
    },
    async sentMessageId(target, deliveryId) {
      return (await store.findDelivered(target.chatId, deliveryId))?.id;
    },
    async sendTyping(target: ChatTarget): Promise<void> {
      store.typing(target.chatId);
    },
    async downloadAttachment(attachment, download) {
      return uploadedBytes(uploads, attachment, download.maxBytes);
    },
    async sendDraft(target, draft) {
      if (!ID_RE.test(target.chatId)) return false;
      drafts.update(target.chatId, { liveReplyId: draft.liveReplyId, seq: draft.seq, text: draft.seq === 0 ? draft.text : draft.appended });
      return true;
    },
    async clearDraft(target, liveReplyId) {
      drafts.close(target.chatId, liveReplyId, true);
    },
  };
}

/** What the routes read: the replies, and this process's live drafts. */
interface Live {
  store: ReplyStore;
  drafts: DraftHub;
}

/** The routes: the page and the JSON API. */
function createApp(live: Live, handler: () => InboundHandler | undefined, options: ResolvedWebChannelOptions, logger: Logger, parts: { guard?: MiddlewareHandler; readTranscript?: TranscriptSource; uploads: Map<string, Buffer> }): Hono {
  const { guard, readTranscript, uploads } = parts;
  // Requests a Redis outage fails one after another: one warning per 30 s.
  const log = createOutageLog(logger);
  const { store } = live;
  const app = new Hono();
  if (guard) {
    app.use('/chat', guard);
    app.use('/api/chat/*', guard);
  }
  // Without a guard too: a page on another site may not post into a conversation.
  app.use('/api/chat/*', async (c, next) => {
    const request = { method: c.req.method, host: c.req.header('host') ?? new URL(c.req.url).host, origin: c.req.header('origin'), secFetchSite: c.req.header('sec-fetch-site') };
    return isCrossSiteWrite(request) ? c.json({ error: 'forbidden: cross-site request refused' }, 403) : next();
  });
  mountChatPage(app, { title: options.title, basePath: options.basePath }, guard);
  app.use('/api/chat/:conversationId/*', async (c, next) => {
    if (!ID_RE.test(c.req.param('conversationId') ?? '')) return c.json({ error: 'conversationId must be 1–64 characters of A-Z, a-z, 0-9, _ and -' }, 400);
    await next();
  });
  const limit = declaredBodyLimit(options.maxBodyBytes, (c) => c.json({ error: `body over ${options.maxBodyBytes} bytes` }, 413));
  // A form with a file may be as large as the file limit plus the other fields.
  const uploadLimit = declaredBodyLimit(options.maxUploadBytes + options.maxBodyBytes, (c) => {
    logger.info({ channel: 'web', conversationId: c.req.param('conversationId'), outcome: 'too_large', declaredBytes: Number(c.req.header('content-length')), limitBytes: options.maxUploadBytes }, 'upload refused');
    return c.json({ error: `the upload is over the limit of ${formatBytes(options.maxUploadBytes)}, so it was not read`, refused: 'too_large' }, 413);
  });
  app.post('/api/chat/:conversationId/messages', uploadSlots(options.maxConcurrentUploads), (c, next) => (isMultipart(c) ? uploadLimit : limit)(c, next), (c) => postMessage(c, handler(), log, { pending: uploads, maxBytes: options.maxUploadBytes, logger }));
  app.post('/api/chat/:conversationId/presses', limit, (c) => pressChoice(c, { store, onMessage: handler(), log }));
  // Reads pass no rate limit and hold memory while open: a few at once per client address.
  const reads = createReadSlots(options.maxReadsPerClient);
  app.get('/api/chat/:conversationId/messages', async (c) => {
    const release = reads.take(c);
    if (release instanceof Response) return release;
    try {
      return await longPoll(c, live, options, log);
    } finally {
      release();
    }
  });
  app.get('/api/chat/:conversationId/events', (c) => {
    const release = reads.take(c);
    return release instanceof Response ? release : events(c, live, options, log, release);
  });
  app.get('/api/chat/:conversationId/history', (c) => historyRoute(c, { store, readTranscript, log }));
  return app;
}

/**
 * GET /api/chat/:id/messages?after=<cursor>&timeoutMs= — replies after the cursor, waiting for one
 * if none; a change of the reply being written ends the wait too. `partial`: that reply's text so
 * far, while it is written and its final message is not there.
 */
async function longPoll(c: Context, { store, drafts }: Live, options: ResolvedWebChannelOptions, log: OutageLog): Promise<Response> {
  const conversationId = c.req.param('conversationId')!;
  const timeoutMs = Math.min(toNonNegative(c.req.query('timeoutMs'), options.longPollTimeoutMs), options.maxLongPollTimeoutMs);
  // One signal for "stop waiting": the draft changed, or the client went away (cheaper than AbortSignal.any per poll).
  const changed = new AbortController();
  const abort = (): void => changed.abort();
  const request = c.req.raw.signal;
  if (request.aborted) abort();
  else request.addEventListener('abort', abort, { once: true });
  const unlisten = drafts.listen(conversationId, abort);
  try {
    const page = await store.read(conversationId, c.req.query('after'), { timeoutMs, signal: changed.signal });
    for (const reply of page.replies) if (reply.liveReplyId) drafts.close(conversationId, reply.liveReplyId);
    const partial = drafts.open(conversationId);
    return c.json({ messages: page.replies, ...(page.epoch === undefined ? {} : { epoch: page.epoch }), next: page.next, ...(partial ? { partial } : {}) });
  } catch (err) {
    log.warn({ err, conversationId }, 'web replies not readable');
    return c.json({ error: 'replies not available; retry' }, 503);
  } finally {
    unlisten();
    request.removeEventListener('abort', abort);
  }
}

/** GET /api/chat/:id/events — SSE: replays replies after the cursor `after` (or Last-Event-ID), then streams; `release` when it ends. */
function events(c: Context, { store, drafts }: Live, options: ResolvedWebChannelOptions, log: OutageLog, release: () => void): Response {
  const conversationId = c.req.param('conversationId')!;
  const lastEventId = c.req.header('last-event-id');
  const after = lastEventId !== undefined && isCursor(lastEventId) ? lastEventId : c.req.query('after');
  return streamSSE(c, async (stream) => {
    try {
      await streamReplies(stream);
    } finally {
      release();
    }
  });

  /** Writes the replay, then every reply, delta, typing hint and keep-alive until the client goes or a read fails. */
  async function streamReplies(stream: SSEStreamingApi): Promise<void> {
    await stream.write(`retry: ${options.sseRetryMs}\n\n`);
    const queue: StreamItem[] = [];
    let wake: (() => void) | undefined;
    const push = (item: StreamItem): void => {
      queue.push(item);
      wake?.();
    };
    const unlisten = store.listen(conversationId, push);
    const unlistenDrafts = drafts.follow(conversationId, (delta) => push({ type: 'delta', delta }));
    const keepAlive = setInterval(() => push({ type: 'keep-alive' }), options.keepAliveMs);
    stream.onAbort(() => push({ type: 'closed' }));
    const reading = new AbortController();
    const pump = pumpReplies({ store, log, push: (item) => {
      if (item.type === 'message' && item.reply.liveReplyId) drafts.close(conversationId, item.reply.liveReplyId);
      push(item);
    } }, conversationId, after, { waitMs: options.keepAliveMs, signal: reading.signal });
    try {
      for (;;) {
        const item = queue.shift();
        if (!item) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        if (item.type === 'closed') return;
        if (item.type === 'keep-alive') await stream.write(': keep-alive\n\n');
        else if (item.type === 'typing') await stream.writeSSE({ event: 'typing', data: '{}' });
        else if (item.type === 'delta') await stream.writeSSE({ event: 'delta', data: JSON.stringify(item.delta) });
        else await stream.writeSSE({ event: 'message', id: item.reply.cursor, data: JSON.stringify(item.reply) });
      }
    } finally {
      reading.abort();
      clearInterval(keepAlive);
      unlisten();
      unlistenDrafts();
      await pump;
    }
  }
}

/** Reads replies from the store into the SSE queue until aborted; a read failure closes the stream (the page reconnects). */
async function pumpReplies(deps: { store: ReplyStore; log: OutageLog; push: (item: StreamItem) => void }, conversationId: string, after: string | undefined, options: { waitMs: number; signal: AbortSignal }): Promise<void> {
  let cursor = after;
  while (!options.signal.aborted) {
    try {
      const page = await deps.store.read(conversationId, cursor, { timeoutMs: options.waitMs, signal: options.signal });
      if (options.signal.aborted) return;
      for (const reply of page.replies) deps.push({ type: 'message', reply });
      cursor = page.next;
    } catch (err) {
      if (options.signal.aborted) return;
      deps.log.warn({ err, conversationId }, 'web reply stream failed');
      deps.push({ type: 'closed' });
      return;
    }
  }
}

/** What the SSE loop writes: replies, hints, keep-alive comments. */
type StreamItem = { type: 'message'; reply: WebReply } | ReplyHint | { type: 'keep-alive' } | { type: 'delta'; delta: DraftDelta };

/** The bytes of a file posted with a message still being handled (the gateway's attachment step asks for them). */
function uploadedBytes(uploads: Map<string, Buffer>, attachment: Attachment, maxBytes: number): Buffer {
  const bytes = uploads.get(attachment.ref);
  if (!bytes) throw new ChannelError(`download failed for web upload ${attachment.fileName ?? attachment.ref} (no longer held: its request ended)`, { retryable: false, code: CHANNEL_ERROR_CODES.permanent });
  if (bytes.length > maxBytes) throw new ChannelError(`download refused for web upload ${attachment.fileName ?? ''} (${bytes.length} bytes, limit ${maxBytes})`, { retryable: false, code: CHANNEL_ERROR_CODES.fileTooLarge });
  return bytes;
}

/**
 * hono's `bodyLimit`, with its Content-Length decision taken before it: a request that declares its
 * length (and is not chunked) is judged by the header alone, as `bodyLimit` judges it, without
 * touching `c.req.raw.body` — which makes @hono/node-server build a whole fetch `Request` and a web
 * stream for the body (most of a post's HTTP cost), where `c.req.json()` reads the socket directly.
 * A chunked body goes through `bodyLimit`, which counts its bytes.
 */
function declaredBodyLimit(maxSize: number, onError: (c: Context) => Response | Promise<Response>): MiddlewareHandler {
  const counted = bodyLimit({ maxSize, onError });
  return async (c, next) => {
    const length = c.req.header('content-length');
    if (length === undefined || c.req.header('transfer-encoding') !== undefined) return counted(c, next);
    if (Number.parseInt(length || '0', 10) > maxSize) return onError(c);
    await next();
  };
}

function toNonNegative(value: string | undefined, fallback: number): number {
  const parsed = Number(value);
  return value !== undefined && value !== '' && Number.isFinite(parsed) && parsed >= 0 ? Math.floor(parsed) : fallback;
}
