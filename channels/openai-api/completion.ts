/**
 * `POST /v1/chat/completions`: the request's new input goes through the gateway's ingest as one
 * message of the session `api:<user>:<session>`; the answer the gateway delivers to that chat is
 * the completion, whole or streamed (SSE `chat.completion.chunk`s, then `data: [DONE]`).
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { parseCommand } from '../../src/core/commands.js';
import { sessionKeyOf, toWellFormedInbound, type InboundMessage, type InboundVerdict } from '../../src/core/inbound.js';
import type { Logger } from '../../src/log.js';
import type { InboundHandler } from '../channel.js';
import { API_CLAIM_TTL_MS, type ReplyRelay } from './relay.js';
import { sessionNameOf, toCompletionRequest, type CompletionRequest } from './request.js';
import { apiError, chunkBody, completionBody, overBudgetError, refusalError, toApiUsage, type ApiError, type ApiUsage } from './shapes.js';
import { Waiter, type Waiters } from './waiter.js';

/** A client's own request id (`Idempotency-Key`): a retry with the same one is recognised as the same message. */
const IDEMPOTENCY_RE = /^[\w.-]{1,64}$/;

/** What a completion needs from its channel. */
export interface CompletionDeps {
  log: Logger;
  onMessage?: InboundHandler;
  waiters: Waiters;
  relay?: ReplyRelay;
  /** The session's usage ledger (prompt and completion tokens, as `/usage` shows them). */
  readUsage?: (sessionId: string) => Promise<{ promptTokens: number; completionTokens: number }>;
  options: { maxWaitMs: number; keepAliveMs: number };
}

/** One request on its way: its ids and what it waits with. */
interface Pending {
  id: string;
  created: number;
  model: string;
  sessionId: string;
  chatId: string;
  waiter: Waiter;
  /** The session's name (for messages). */
  session: string;
  /** The client went away: the request keeps its place in line, and gives up its claim on the session (an answer no longer finds it from another gateway). */
  orphan(): void;
  /** Gives up the request's claim on its session (set once it has one). */
  unclaim(): void;
  /** Text to stream, written by the waiter and drained by the event stream. */
  queue: string[];
  wake?: () => void;
  usageBefore: { promptTokens: number; completionTokens: number };
}

/** Handles one completion request of `user`; see the module comment. */
export async function handleCompletion(c: Context, user: string, deps: CompletionDeps): Promise<Response> {
  const onMessage = deps.onMessage;
  if (!onMessage) return answerError(c, apiError(503, 'the API is not started yet; retry', 'server_error', 'unavailable'));
  const request = await readRequest(c);
  if ('status' in request) return answerError(c, request);
  const session = sessionNameOf(c.req.header('x-chatgate-session'), request);
  const message = toMessage(c, user, session, request, deps.waiters);
  if ('status' in message) return answerError(c, message);
  const p: Pending = {
    id: `chatcmpl-${message.platformMessageId!.replace(/[^\w]/g, '')}`, created: Math.floor(Date.now() / 1000), model: request.model,
    sessionId: sessionKeyOf(message), chatId: message.chatId, session: session!, queue: [], usageBefore: { promptTokens: 0, completionTokens: 0 },
    orphan() {
      p.waiter.orphan();
      p.unclaim();
    },
    unclaim: () => undefined,
    waiter: new Waiter(message.id, request.stream ? (delta) => {
      p.queue.push(delta);
      p.wake?.();
    } : undefined),
  };
  const refused = await enter(p, message, onMessage, deps);
  if (refused) return answerError(c, refused);
  return request.stream ? streamAnswer(c, p, request, deps, await firstTextOrAnswer(c, p, deps)) : wholeAnswer(c, p, deps);
}

/** The request as a message of its session, or why it cannot be one (a bad session name, a session still waiting). */
function toMessage(c: Context, user: string, session: string | null, request: CompletionRequest, waiters: Waiters): InboundMessage | ApiError {
  if (session === null) return apiError(400, 'the session name (X-Chatgate-Session, metadata.session or user) must be 1–64 characters of A-Z a-z 0-9 _ . @ -', 'invalid_request_error', 'invalid_session', 'X-Chatgate-Session');
  const chatId = `${user}:${session}`;
  // One turn at a time: two requests' messages may be answered by one reply. A command may come any time (`/stop`).
  if (parseCommand(request.text) === null && waiters.busy(chatId)) return sessionBusy(session);
  const key = c.req.header('idempotency-key');
  const requestId = key !== undefined && IDEMPOTENCY_RE.test(key) ? key : randomUUID();
  return toWellFormedInbound({
    id: `api:${chatId}:${requestId}`, channel: 'api', chatId, userId: user, userName: user, text: request.text, attachments: [],
    // Refusals and approval decisions are answered in this response, from the verdict.
    platformMessageId: requestId, chatType: 'private', receivedAt: Date.now(), refusalsAnswered: true, answerInPlace: true,
  });
}

/**
 * Puts the request in line and its message into the gateway; the line is left when the answer
 * comes (or the wait ends). @returns the error to answer instead (a refusal, a store failure).
 */
async function enter(p: Pending, message: InboundMessage, onMessage: InboundHandler, deps: CompletionDeps): Promise<ApiError | null> {
  const { chatId } = p;
  try {
    if (!(await claimSession(p, message, deps))) return sessionBusy(p.session);
  } catch (err) {
    return notTaken(err, p, deps);
  }
  // In line before the message goes in: its answer may come before the verdict does.
  deps.waiters.add(chatId, p.waiter);
  const release = (): void => {
    p.waiter.cancel(new Error('released'));
    p.unclaim();
    deps.waiters.remove(chatId, p.waiter);
  };
  let verdict: InboundVerdict;
  try {
    p.usageBefore = (await deps.readUsage?.(p.sessionId)) ?? p.usageBefore;
    verdict = (await onMessage(message)) ?? { outcome: 'accepted' };
  } catch (err) {
    release();
    return notTaken(err, p, deps);
  }
  const refused = refusalError(verdict);
  if (refused) {
    release();
    return refused;
  }
  // An approval that resumes the turn waits for the turn's answer; one that changed nothing, or left the turn
  // waiting for other decisions, is answered now (with the questions still open).
  const decided = verdict.answer;
  const resumes = decided !== undefined && decided.settled && !decided.repeat && !decided.open;
  deps.waiters.decide(chatId, p.waiter, resumes ? 'resumed' : verdict.outcome === 'command' ? 'command' : 'turn');
  if (decided && !resumes) p.waiter.take({ text: [decided.text, ...(decided.open ?? [])].join('\n\n'), answersTurn: false, asks: false });
  const timer = setTimeout(() => p.waiter.cancel(new WaitTimeout()), deps.options.maxWaitMs);
  p.waiter.answer.finally(() => {
    clearTimeout(timer);
    release();
  }).catch(() => undefined);
  return null;
}

/**
 * Claims the session on every gateway, renewed while the request waits: the claim is also how an
 * answer delivered by another gateway finds this one (relay.ts). A command's request is never
 * refused and holds no one up: its claim yields, and when another request has the session that
 * request's claim marks the chat (renewing takes the claim once it is free). @returns false when a
 * message that is no command finds another request holding the session.
 */
async function claimSession(p: Pending, message: InboundMessage, deps: CompletionDeps): Promise<boolean> {
  const relay = deps.relay;
  if (!relay) return true;
  const command = parseCommand(message.text) !== null;
  if (!(await relay.claim(p.chatId, message.id, command)) && !command) return false;
  const renewal = setInterval(() => void relay.claim(p.chatId, message.id, command).catch(() => undefined), API_CLAIM_TTL_MS / 3);
  p.unclaim = () => {
    p.unclaim = () => undefined;
    clearInterval(renewal);
    void relay.unclaim(p.chatId, message.id);
  };
  return true;
}

/** The answer as one completion; a long wait starts the 200 response and keeps it alive with spaces (JSON allows them). */
async function wholeAnswer(c: Context, p: Pending, deps: CompletionDeps): Promise<Response> {
  // The client may have gone while the message went in.
  if (c.req.raw.signal.aborted) p.orphan();
  else c.req.raw.signal.addEventListener('abort', () => p.orphan(), { once: true });
  const outcome = p.waiter.answer.then((text) => ({ text }), (err: unknown) => ({ err }));
  let keepAlive: NodeJS.Timeout | undefined;
  const early = await Promise.race([outcome, new Promise<null>((resolve) => (keepAlive = setTimeout(() => resolve(null), deps.options.keepAliveMs)))]);
  clearTimeout(keepAlive);
  if (early) {
    if ('err' in early) return answerError(c, waitError(early.err));
    if (p.waiter.refusal) return answerError(c, overBudgetError(early.text));
    return c.json(completionBody(p.id, p.model, p.created, early.text, await usageOf(p, deps)));
  }
  const encoder = new TextEncoder();
  let spaces: NodeJS.Timeout | undefined;
  // Set when the client went away: nothing more is written (writing to a cancelled stream throws).
  let gone = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      spaces = setInterval(() => controller.enqueue(encoder.encode(' ')), deps.options.keepAliveMs);
      void outcome.then(async (result) => {
        clearInterval(spaces);
        if (gone) return;
        // The 200 has started: an error is its body.
        const json = 'err' in result ? waitError(result.err).body : p.waiter.refusal ? overBudgetError(result.text).body : completionBody(p.id, p.model, p.created, result.text, await usageOf(p, deps));
        if (gone) return;
        controller.enqueue(encoder.encode(JSON.stringify(json)));
        controller.close();
      }).catch((err: unknown) => deps.log.warn({ err, sessionId: p.sessionId }, 'api answer not written'));
    },
    cancel() {
      gone = true;
      clearInterval(spaces);
      p.orphan();
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
}

/**
 * Waits, before a stream starts, for its first text, its answer or `keepAliveMs`: an answer that is
 * a refusal (a spend limit holds) is then answered 429 like the gateway's own refusal. @returns that
 * answer when it came first.
 */
async function firstTextOrAnswer(c: Context, p: Pending, deps: CompletionDeps): Promise<string | null> {
  if (p.queue.length > 0 || c.req.raw.signal.aborted) return null;
  let timer: NodeJS.Timeout | undefined;
  let gone: (() => void) | undefined;
  const text = new Promise<null>((resolve) => (p.wake = () => resolve(null)));
  const answer = p.waiter.answer.then((t) => t, () => null);
  // A client gone meanwhile: the stream starts, and its abort orphans the request.
  const aborted = new Promise<null>((resolve) => {
    gone = () => resolve(null);
    c.req.raw.signal.addEventListener('abort', gone, { once: true });
  });
  const first = await Promise.race([answer, text, aborted, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), deps.options.keepAliveMs)))]);
  clearTimeout(timer);
  c.req.raw.signal.removeEventListener('abort', gone!);
  p.wake = undefined;
  return first;
}

/** The answer as SSE chunks: the role, the text as it is written, the finish, the usage when asked, then `[DONE]`. A refusal that came first is a 429. */
function streamAnswer(c: Context, p: Pending, request: CompletionRequest, deps: CompletionDeps, answered: string | null): Response {
  if (answered !== null && p.waiter.refusal) return answerError(c, overBudgetError(answered));
  return streamSSE(c, async (stream) => {
    stream.onAbort(() => p.orphan());
    const send = (part: Parameters<typeof chunkBody>[3]) => stream.writeSSE({ data: JSON.stringify(chunkBody(p.id, p.model, p.created, part)) });
    await send({ delta: { role: 'assistant', content: '' } });
    let ended = false;
    let failure: unknown;
    p.waiter.answer.then(() => undefined, (err: unknown) => (failure = err)).finally(() => {
      ended = true;
      p.wake?.();
    });
    const keepAlive = setInterval(() => void stream.write(': keep-alive\n\n').catch(() => undefined), deps.options.keepAliveMs);
    try {
      for (;;) {
        const delta = p.queue.splice(0).join('');
        if (delta !== '') await send({ delta: { content: delta } });
        if (ended && p.queue.length === 0) break;
        await new Promise<void>((resolve) => (p.wake = resolve));
        p.wake = undefined;
      }
    } finally {
      clearInterval(keepAlive);
    }
    if (stream.aborted) return;
    if (failure !== undefined || p.waiter.refusal) {
      // A refusal after the stream started (its first text came later than keepAliveMs): OpenAI's error event.
      const error = failure !== undefined ? waitError(failure) : overBudgetError(await p.waiter.answer);
      await stream.writeSSE({ data: JSON.stringify(error.body) });
    } else {
      await send({ finish: true });
      if (request.includeUsage) await send({ usage: await usageOf(p, deps) });
    }
    await stream.writeSSE({ data: '[DONE]' });
  });
}

/** Answers `error` in OpenAI's shape, with `Retry-After` when it has a wait. */
export function answerError(c: Context, error: ApiError): Response {
  if (error.retryAfterSeconds !== undefined) c.header('Retry-After', String(error.retryAfterSeconds));
  if (error.noRetry) c.header('x-should-retry', 'false');
  return c.json(error.body, error.status);
}

/** Reads and checks the body. */
async function readRequest(c: Context): Promise<CompletionRequest | ApiError> {
  let json: unknown;
  try {
    json = await c.req.json();
  } catch {
    return apiError(400, 'the body must be JSON (Content-Type: application/json)', 'invalid_request_error', 'invalid_json');
  }
  const request = toCompletionRequest(json);
  return 'param' in request ? apiError(400, request.message, 'invalid_request_error', 'invalid_request', request.param) : request;
}

/** The tokens the session's ledger grew by during the request (its model calls, tool rounds included). */
async function usageOf(p: Pending, deps: CompletionDeps): Promise<ApiUsage> {
  try {
    const after = (await deps.readUsage?.(p.sessionId)) ?? p.usageBefore;
    return toApiUsage(after.promptTokens - p.usageBefore.promptTokens, after.completionTokens - p.usageBefore.completionTokens);
  } catch (err) {
    deps.log.warn({ err, sessionId: p.sessionId }, 'api usage not readable; reported as zero');
    return toApiUsage(0, 0);
  }
}

class WaitTimeout extends Error {}

/** The 503 of a request whose message could not be taken (`err`: why). */
function notTaken(err: unknown, p: Pending, deps: CompletionDeps): ApiError {
  deps.log.warn({ err, sessionId: p.sessionId }, 'api request not taken');
  return apiError(503, 'the message could not be taken (the store is unavailable); retry', 'server_error', 'unavailable');
}

/** The 409 of a request sent while another request of its session waits for its answer (here or on another gateway). */
function sessionBusy(session: string): ApiError {
  return { ...apiError(409, `a request of session ${session} still waits for its answer: send one at a time per session`, 'invalid_request_error', 'session_busy'), noRetry: true };
}

function waitError(err: unknown): ApiError {
  // Sent again, the message would be added twice: the turn is still running.
  if (err instanceof WaitTimeout) return { ...apiError(504, 'no answer in time; it will still be added to the session', 'server_error', 'timeout'), noRetry: true };
  return apiError(503, `no answer: ${err instanceof Error ? err.message : String(err)}`, 'server_error', 'unavailable');
}
