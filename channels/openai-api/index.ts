/**
 * The OpenAI-compatible API channel: `POST /v1/chat/completions` and `GET /v1/models` on the
 * gateway's HTTP server. A request is one message into the gateway's ingest; its answer is the
 * reply the gateway delivers to its chat (README.md).
 */
import { createHash } from 'node:crypto';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { sessionKeyOf } from '../../src/core/inbound.js';
import { ChannelError } from '../../src/errors.js';
import { createSilentLogger, type Logger } from '../../src/log.js';
import type { RedisClient } from '../../src/redis/client.js';
import { DEFAULT_KEY_PREFIX } from '../../src/redis/keys.js';
import { CHANNEL_ERROR_CODES, type Channel, type ChatTarget, type InboundHandler, type OutgoingText, type SentMessage } from '../channel.js';
import { answerError, handleCompletion, type CompletionDeps } from './completion.js';
import { createRedisReplyRelay, type ReplyRelay } from './relay.js';
import { apiError, modelsBody } from './shapes.js';
import { Waiters, type Delivered } from './waiter.js';

/** One bearer key and the user its requests come from. */
export interface ApiKey {
  key: string;
  user: string;
}

/** Options of {@link createOpenAiApiChannel}. Durations in ms. */
export interface OpenAiApiChannelOptions {
  /** The bearer keys; a request with another key (or none) gets 401. */
  keys: readonly ApiKey[];
  /** Key prefix of the relay's Redis keys (the gateway's). Default `cg:`. */
  keyPrefix?: string;
  /** Longest wait for an answer; then 504 (the answer still lands in the session). Default 600 000. */
  maxWaitMs?: number;
  /** A non-streaming answer that takes longer than this starts its 200 response and sends a space every period; a stream sends an SSE comment. Default 15 000. */
  keepAliveMs?: number;
  /** Largest request body, bytes (a whole history may be sent). Default 4 MiB. */
  maxBodyBytes?: number;
}

/** What the channel needs from its host. */
export interface OpenAiApiChannelDeps {
  log?: Logger;
  /** With Redis, an answer another gateway delivers reaches the request waiting here (relay.ts). Default: this gateway only. */
  redis?: RedisClient;
  /**
   * The inbound message ids before the answer `replyId` in the session's transcript (its newest
   * entries), or null when it is not there: which requests a turn's answer is for (waiter.ts).
   * Default: the first request in line takes it.
   */
  answeredBy?: (sessionId: string, replyId: string) => Promise<ReadonlySet<string> | null>;
  /**
   * Reads the session's usage ledger (what `/usage` shows): the tokens an answer reports are the
   * ledger's growth during the request. Default: answers report zero usage.
   */
  readUsage?: CompletionDeps['readUsage'];
}

/** The API channel: mount {@link OpenAiApiChannel.app} on the gateway's HTTP server. */
export interface OpenAiApiChannel extends Channel {
  readonly name: 'api';
  /** Routes: `POST /v1/chat/completions`, `GET /v1/models`. */
  readonly app: Hono;
  /** Requests waiting for their answer right now. */
  waiting(): number;
}

const DEFAULTS = { keyPrefix: DEFAULT_KEY_PREFIX, maxWaitMs: 600_000, keepAliveMs: 15_000, maxBodyBytes: 4 * 1024 * 1024 };

/** How the API takes a reply, on a gateway that runs it and on one that only relays its answers. */
const SENDS = {
  name: 'api',
  /** An answer is one message: far above any model output, so a reply is never split. */
  maxMessageLength: 10_000_000,
  lengthUnit: 'codepoints',
  formatting: 'markdown',
  typingIntervalMs: 60_000,
} as const;

/** Creates the OpenAI-compatible API channel. */
export function createOpenAiApiChannel(deps: OpenAiApiChannelDeps, options: OpenAiApiChannelOptions): OpenAiApiChannel {
  const resolved = { ...DEFAULTS, ...options };
  const log = (deps.log ?? createSilentLogger()).child({ component: 'channel', channel: 'api' });
  const users = new Map(resolved.keys.map(({ key, user }) => [digest(key), user]));
  const waiters = new Waiters();
  const relay: ReplyRelay | undefined = deps.redis ? createRedisReplyRelay(deps.redis, resolved.keyPrefix, log) : undefined;
  const state: { onMessage?: InboundHandler } = {};
  /** Hands an answer to its request in this process; false when none here wants it. */
  const hand = async (chatId: string, item: Delivered): Promise<boolean> => {
    const followed = item.replyId && deps.answeredBy && waiters.awaitsTurn(chatId) ? await coveredBy(deps.answeredBy, chatId, item.replyId, log) : undefined;
    // The messages it names itself (an `/approve` whose decision resumed the turn; a question's turn) count with the transcript's.
    const covered = item.answers ? new Set([...item.answers, ...(followed ?? [])]) : followed;
    const handed = waiters.deliver(chatId, item, covered);
    if (handed === 'orphaned') log.info({ chatId }, 'api answer dropped: its request went away (the answer stays in the session)');
    return handed !== 'unwanted';
  };
  const completion: Omit<CompletionDeps, 'onMessage'> = { log, waiters, relay, readUsage: deps.readUsage, options: resolved };
  const app = createApp(users, resolved.maxBodyBytes, (c, user) => handleCompletion(c, user, { ...completion, onMessage: state.onMessage }));

  return {
    ...SENDS,
    localDrafts: true,
    app,
    waiting: () => waiters.size,
    async start(onMessage) {
      state.onMessage = onMessage;
      await relay?.start((chatId, item) => {
        // Every gateway hears every relayed answer; the one holding the request takes it.
        void hand(chatId, item).then((handed) => {
          if (!handed) log.debug({ chatId }, 'relayed api answer not for a request here');
        });
      });
    },
    async stop() {
      state.onMessage = undefined;
      waiters.cancelAll(new Error('the gateway is stopping'));
      await relay?.stop();
    },
    async send(target: ChatTarget, message: OutgoingText): Promise<SentMessage> {
      const item = deliveredOf(message);
      const messageId = message.deliveryId ?? `api-${Date.now()}`;
      if (await hand(target.chatId, item)) return { messageId };
      await passOn({ relay, log }, target.chatId, item, waiters.has(target.chatId));
      return { messageId };
    },
    async sendTyping() {
      // An HTTP request shows no typing; a long wait is kept alive by the request itself.
    },
    async sendDraft(target, draft) {
      return waiters.draft(target.chatId, draft);
    },
    async clearDraft(target, liveReplyId) {
      waiters.clearDraft(target.chatId, liveReplyId);
    },
  };
}

/**
 * Where a gateway that does not run the API (no `CHATGATE_API_KEYS` here, as during a rolling restart
 * that turns them on) delivers the API's replies: no routes, no keys, no requests of its own. Any
 * gateway may take a reply from the outbound stream; this one passes it on as the channel does when
 * none of its requests takes it: to the gateway whose request claims the session, else it is dropped.
 * Nothing to start: publishing needs no subscription.
 */
export function createApiAnswerRelay(deps: { redis: RedisClient; log?: Logger }, options: { keyPrefix?: string } = {}): Channel {
  const log = (deps.log ?? createSilentLogger()).child({ component: 'channel', channel: 'api' });
  const relay = createRedisReplyRelay(deps.redis, options.keyPrefix ?? DEFAULT_KEY_PREFIX, log);
  return {
    ...SENDS,
    async start() {},
    async stop() {},
    async sendTyping() {},
    async send(target, message) {
      await passOn({ relay, log }, target.chatId, deliveredOf(message), false);
      return { messageId: message.deliveryId ?? `api-${Date.now()}` };
    },
  };
}

/** The answer `message` carries, as a request takes it. */
function deliveredOf(message: OutgoingText): Delivered {
  const replyId = message.answersTurn && message.deliveryId ? { replyId: message.deliveryId.replace(/#\d+$/, '') } : {};
  const answers = message.answers ? { answers: message.answers } : {};
  const asks = (message.choices?.length ?? 0) > 0;
  return {
    text: message.text, answersTurn: message.answersTurn === true, asks, ...(asks && message.questions ? { questions: message.questions } : {}), ...replyId, ...answers,
    ...(message.refusal ? { refusal: message.refusal } : {}),
  };
}

/**
 * An answer no request of this gateway took: a request of the chat may wait on another gateway
 * (another request's answer, a command's), which the relay hands it to; else it is dropped.
 * `waitsHere`: a request of the chat waits here, and this is no answer to it (a compaction notice).
 * @throws ChannelError (transient) when the relay cannot publish: the delivery retries.
 */
async function passOn(deps: { relay?: ReplyRelay; log: Logger }, chatId: string, item: Delivered, waitsHere: boolean): Promise<void> {
  try {
    if (deps.relay && (await deps.relay.forward(chatId, item))) return;
  } catch (err) {
    throw new ChannelError(`send failed for api:${chatId} (relay)`, { retryable: true, code: CHANNEL_ERROR_CODES.transient, cause: err });
  }
  if (waitsHere) deps.log.debug({ chatId }, 'api notice not part of an answer: not shown');
  else deps.log.info({ chatId, answersTurn: item.answersTurn }, 'api answer dropped: no request waits for it (the answer stays in the session)');
}

/** The routes, behind the bearer keys. */
function createApp(users: ReadonlyMap<string, string>, maxBodyBytes: number, complete: (c: Context, user: string) => Promise<Response>): Hono {
  const app = new Hono();
  /** The user the request's bearer key names, or the 401 answer. */
  const authorised = (c: Context): string | Response => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '');
    const user = match ? users.get(digest(match[1]!)) : undefined;
    return user ?? answerError(c, apiError(401, match ? 'Incorrect API key provided.' : 'Missing bearer API key (Authorization: Bearer <key>).', 'invalid_request_error', 'invalid_api_key'));
  };
  app.get('/v1/models', (c) => {
    const user = authorised(c);
    return typeof user === 'string' ? c.json(modelsBody()) : user;
  });
  const limit = bodyLimit({ maxSize: maxBodyBytes, onError: (c) => answerError(c, apiError(400, `the body is over ${maxBodyBytes} bytes`, 'invalid_request_error', 'body_too_large')) });
  // The key is checked before the body is read.
  const auth: MiddlewareHandler = async (c, next) => {
    const user = authorised(c);
    if (typeof user !== 'string') return user;
    await next();
  };
  app.post('/v1/chat/completions', auth, limit, (c) => complete(c, authorised(c) as string));
  return app;
}

/** The messages an answer covers, or undefined (then the first request in line takes it) when the transcript does not say. */
async function coveredBy(answeredBy: NonNullable<OpenAiApiChannelDeps['answeredBy']>, chatId: string, replyId: string, log: Logger): Promise<ReadonlySet<string> | undefined> {
  try {
    return (await answeredBy(sessionKeyOf({ channel: 'api', chatId, userId: '', chatType: 'private' }), replyId)) ?? undefined;
  } catch (err) {
    log.warn({ err, chatId }, 'api transcript not readable; the first request in line takes the answer');
    return undefined;
  }
}

/** Keys are looked up by their SHA-256: no comparison of the secret itself, and the map holds no key. */
function digest(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
