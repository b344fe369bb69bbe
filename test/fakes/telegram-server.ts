/**
 * A fake Telegram Bot API server: real HTTP on 127.0.0.1, port 0. Speaks enough of the Bot API
 * for grammY (`new Bot(token, { client: { apiRoot } })`): getMe, getUpdates with real long-poll
 * semantics (held until an update is pushed or the timeout passes; `offset` confirms), sendMessage
 * (validates Telegram HTML and the 4096 limit), sendChatAction, editMessageText (refuses an
 * unchanged text with 400 "message is not modified", a message it never sent, too long or bad
 * HTML), deleteMessage, sendMessageDraft (private chats only, 0–4096 characters), setMyCommands,
 * deleteWebhook, setWebhook, getFile and the file download route `/file/bot<token>/<file_path>`
 * (like the cloud Bot API, getFile refuses files over 20 MB with 400 "file is too big"). Keeps the
 * current text of every message it sent (`messageText`). Records every call; can be told to fail
 * the next calls of a method.
 * Like the real Bot API, a getUpdates that arrives while another is still open for the token (two
 * pollers) ends the open one with 409 Conflict; `getUpdatesConflicts` counts them.
 * Inline keyboards: sendMessage keeps a message's `reply_markup` (`markupOf`; callback_data over 64
 * bytes is refused with 400 BUTTON_DATA_INVALID), editMessageText replaces it (none given: removed);
 * `pushCallbackQuery` presses a button, and answerCallbackQuery refuses an unknown query id or a
 * second answer with 400, as the real Bot API does.
 * Like the real Bot API, it answers 403 to any send into the chat of a user who blocked the bot,
 * and 400 to a send into a forum topic that was deleted.
 */
import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One recorded API call. */
export interface TelegramCall {
  method: string;
  params: Record<string, unknown>;
  /** ms since epoch when the request arrived. */
  atMs: number;
}

/** A scripted failure answered instead of the normal result. */
export interface TelegramFailure {
  errorCode: number;
  description: string;
  /** Sent as `parameters.retry_after`, in seconds. */
  retryAfterSeconds?: number;
}

/** Options of {@link startFakeTelegram}. */
export interface FakeTelegramOptions {
  token?: string;
  botId?: number;
  botUsername?: string;
}

const TELEGRAM_HTML_TAGS = new Set(['b', 'strong', 'i', 'em', 'u', 'ins', 's', 'strike', 'del', 'code', 'pre', 'a', 'blockquote', 'tg-spoiler', 'span', 'tg-emoji']);
const MAX_TEXT = 4096;
/** How long a poll ended by another waits for its client's close (already sent) to be read, ms. */
const POLL_CLOSE_SETTLE_MS = 25;
const SEND_METHODS = new Set(['sendMessage', 'sendChatAction', 'editMessageText', 'sendMessageDraft', 'deleteMessage']);

/** The running fake; see the module comment. */
export class FakeTelegramServer extends EventEmitter {
  readonly calls: TelegramCall[] = [];
  readonly token: string;
  readonly botId: number;
  readonly botUsername: string;
  private readonly updates: Array<{ update_id: number } & Record<string, unknown>> = [];
  private readonly failures: Array<{ method: string; failure: TelegramFailure; when?: (params: Record<string, unknown>) => boolean; window?: boolean }> = [];
  private readonly blocked = new Set<string>();
  private readonly deletedTopics = new Set<string>();
  private readonly files = new Map<string, { bytes: Buffer; path: string; size: number }>();
  /** File downloads served (`/file/bot<token>/…`), by file_path. */
  readonly downloads: string[] = [];
  /**
   * Calls made while the retry_after of a 429 scripted with `window: true` still ran for that
   * method and chat: refused with 429 again, as the real Bot API does, and listed here.
   */
  readonly earlyCalls: TelegramCall[] = [];
  private readonly blockedUntil = new Map<string, number>();
  /** Current text of every message the bot sent, by `<chat_id>:<message_id>` (deleted ones removed). */
  readonly messages = new Map<string, string>();
  /** Current `reply_markup` of messages the bot sent with one, by `<chat_id>:<message_id>`. */
  private readonly markups = new Map<string, unknown>();
  /** Callback queries pushed and not answered yet. */
  private readonly openQueries = new Set<string>();
  private nextQueryId = 1;
  /**
   * getUpdates calls that arrived while another was still open for this token (two pollers): the
   * one already open is answered 409 Conflict, as the real Bot API does.
   */
  getUpdatesConflicts = 0;
  private openPoll: ServerResponse | undefined;
  /** Polls ended by a later getUpdates (answered 409 unless their client is gone). */
  private readonly terminatedPolls = new WeakSet<ServerResponse>();
  private nextUpdateId = 1;
  private nextMessageId = 1000;
  private server!: Server;
  apiRoot = '';

  constructor(options: FakeTelegramOptions = {}) {
    super();
    this.token = options.token ?? '123456789:AAFakeTokenForTests_0123456789abcdef';
    this.botId = options.botId ?? 123456789;
    this.botUsername = options.botUsername ?? 'chatgate_test_bot';
  }

  /** Starts listening on a free port. */
  async listen(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.apiRoot = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Stops the server, dropping held long polls. */
  async close(): Promise<void> {
    this.emit('closing');
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Queues an update (its `update_id` is assigned) and wakes any held getUpdates. */
  pushUpdate(update: Record<string, unknown>): number {
    const updateId = this.nextUpdateId++;
    this.updates.push({ update_id: updateId, ...update });
    this.emit('update');
    return updateId;
  }

  /** Queues a `message` update built from `message` (message_id, date, from and chat defaulted). */
  pushMessage(message: Record<string, unknown>): { updateId: number; messageId: number } {
    const messageId = this.nextMessageId++;
    const full = {
      message_id: messageId,
      date: Math.floor(Date.now() / 1000),
      from: { id: 42, is_bot: false, first_name: 'Ada', username: 'ada' },
      chat: { id: 42, type: 'private', first_name: 'Ada' },
      ...message,
    };
    return { updateId: this.pushUpdate({ message: full }), messageId };
  }

  /**
   * Presses a button of message `messageId` (sent by the bot into `chatId`): queues a `callback_query`
   * update with `data` from user `from` (default Ada, 42). @returns the query id.
   */
  pushCallbackQuery(options: { messageId: number; data: string; chatId?: number; chatType?: string; from?: Record<string, unknown> }): string {
    const id = `cbq-${this.nextQueryId++}`;
    const chatId = options.chatId ?? 42;
    this.openQueries.add(id);
    this.pushUpdate({
      callback_query: {
        id, chat_instance: `ci-${chatId}`, data: options.data,
        from: options.from ?? { id: 42, is_bot: false, first_name: 'Ada', username: 'ada' },
        message: { message_id: options.messageId, date: now(), chat: { id: chatId, type: options.chatType ?? 'private' }, text: this.messages.get(`${chatId}:${options.messageId}`) ?? '' },
      },
    });
    return id;
  }

  /** The `reply_markup` message `messageId` of `chatId` has now, if any. */
  markupOf(chatId: number | string, messageId: number | string): unknown {
    return this.markups.get(`${chatId}:${messageId}`);
  }

  /**
   * Answers the next `times` calls of `method` (matching `when`, if given) with `failure`. With
   * `window`, a 429's `retryAfterSeconds` also holds for that method and chat: calls before it has
   * passed get 429 again (and are listed in `earlyCalls`).
   */
  failNext(method: string, failure: TelegramFailure, options: { times?: number; when?: (params: Record<string, unknown>) => boolean; window?: boolean } = {}): void {
    for (let i = 0; i < (options.times ?? 1); i++) this.failures.push({ method, failure, when: options.when, window: options.window });
  }

  /** The user of private chat `chatId` blocks the bot: every send into it answers 403 from now on. */
  blockUser(chatId: number | string): void {
    this.blocked.add(String(chatId));
  }

  /** The forum topic `threadId` of `chatId` is deleted: every send into it answers 400 from now on. */
  deleteTopic(chatId: number | string, threadId: number | string): void {
    this.deletedTopics.add(`${chatId}:${threadId}`);
  }

  /**
   * Makes a file available to getFile and the download route. `reportedSize` stands in for a huge
   * file without allocating it (getFile answers "file is too big" over 20 MB, as the cloud API does).
   */
  addFile(fileId: string, bytes: Buffer, options: { fileName?: string; reportedSize?: number } = {}): void {
    this.files.set(fileId, { bytes, path: `documents/${fileId}-${options.fileName ?? 'file'}`, size: options.reportedSize ?? bytes.length });
  }

  /** Recorded calls of `method`. */
  callsOf(method: string): TelegramCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  /** Resolves with the `count`-th call of `method` (1-based), waiting for it if needed. */
  async waitForCall(method: string, count = 1): Promise<TelegramCall> {
    for (;;) {
      const calls = this.callsOf(method);
      if (calls.length >= count) return calls[count - 1];
      await once(this, 'call');
    }
  }

  /** The current text of message `messageId` in `chatId`, or undefined (never sent, or deleted). */
  messageText(chatId: number | string, messageId: number | string): string | undefined {
    return this.messages.get(`${chatId}:${messageId}`);
  }

  /** Pending (unconfirmed) update ids. */
  pendingUpdateIds(): number[] {
    return this.updates.map((update) => update.update_id);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const download = /^\/file\/bot([^/]+)\/(.+)$/.exec(req.url?.split('?')[0] ?? '');
    if (download) return this.serveFile(res, download[1], decodeURIComponent(download[2]));
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(req.url?.split('?')[0] ?? '');
    const params = await readParams(req);
    if (!match) return reply(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    const [, token, method] = match;
    if (token !== this.token) return reply(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    this.calls.push({ method, params, atMs: Date.now() });
    this.emit('call', method);
    const window = `${method}:${String(params.chat_id)}`;
    const blockedMs = (this.blockedUntil.get(window) ?? 0) - Date.now();
    if (blockedMs > 0) {
      this.earlyCalls.push(this.calls.at(-1)!);
      return fail(res, { errorCode: 429, description: `Too Many Requests: retry after ${Math.ceil(blockedMs / 1000)}`, retryAfterSeconds: Math.ceil(blockedMs / 1000) });
    }
    const failure = this.takeFailure(method, params);
    if (failure) return fail(res, failure);
    if (method === 'getUpdates') return this.getUpdates(res, params);
    const result = this.answer(method, params);
    if ('errorCode' in result) return fail(res, result);
    reply(res, 200, { ok: true, result: result.value });
    // Again once answered: a waiter on the fake's state (messages) sees the change.
    this.emit('call', method);
  }

  private takeFailure(method: string, params: Record<string, unknown>): TelegramFailure | undefined {
    const index = this.failures.findIndex((entry) => entry.method === method && (!entry.when || entry.when(params)));
    if (index === -1) return undefined;
    const [entry] = this.failures.splice(index, 1);
    const { failure } = entry;
    if (entry.window && failure.errorCode === 429 && failure.retryAfterSeconds) this.blockedUntil.set(`${method}:${String(params.chat_id)}`, Date.now() + failure.retryAfterSeconds * 1000);
    return failure;
  }

  private answer(method: string, params: Record<string, unknown>): { value: unknown } | TelegramFailure {
    const refused = this.refusedSend(method, params);
    if (refused) return refused;
    switch (method) {
      case 'getMe':
        return { value: { id: this.botId, is_bot: true, first_name: 'Chatgate Test', username: this.botUsername, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false } };
      case 'sendMessage':
        return this.sendMessage(params);
      case 'editMessageText':
        return this.editMessageText(params);
      case 'deleteMessage':
        return this.messages.delete(`${String(params.chat_id)}:${String(params.message_id)}`) ? { value: true } : { errorCode: 400, description: 'Bad Request: message to delete not found' };
      case 'sendMessageDraft':
        return this.sendMessageDraft(params);
      case 'getFile':
        return this.getFile(params);
      case 'setMyCommands':
        return commandsProblem(params.commands) ?? { value: true };
      case 'answerCallbackQuery':
        return this.openQueries.delete(String(params.callback_query_id))
          ? { value: true }
          : { errorCode: 400, description: 'Bad Request: query is too old and response timeout expired or query ID is invalid' };
      case 'sendChatAction':
      case 'deleteWebhook':
      case 'setWebhook':
        return { value: true };
      default:
        return { errorCode: 404, description: 'Not Found: method not found' };
    }
  }

  /** What the real Bot API answers to a send into a blocked chat or a deleted topic. */
  private refusedSend(method: string, params: Record<string, unknown>): TelegramFailure | undefined {
    if (!SEND_METHODS.has(method) || params.chat_id === undefined) return undefined;
    const chatId = String(params.chat_id);
    if (this.blocked.has(chatId)) return { errorCode: 403, description: 'Forbidden: bot was blocked by the user' };
    if (params.message_thread_id !== undefined && this.deletedTopics.has(`${chatId}:${String(params.message_thread_id)}`)) {
      return { errorCode: 400, description: 'Bad Request: message thread not found' };
    }
    return undefined;
  }

  private getFile(params: Record<string, unknown>): { value: unknown } | TelegramFailure {
    const fileId = String(params.file_id ?? '');
    const file = this.files.get(fileId);
    if (!file) return { errorCode: 400, description: 'Bad Request: invalid file_id' };
    if (file.size > 20 * 1024 * 1024) return { errorCode: 400, description: 'Bad Request: file is too big' };
    return { value: { file_id: fileId, file_unique_id: `u-${fileId}`, file_size: file.size, file_path: file.path } };
  }

  private serveFile(res: ServerResponse, token: string, path: string): void {
    if (token !== this.token) return reply(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const file = [...this.files.values()].find((f) => f.path === path);
    if (!file) return reply(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    this.downloads.push(path);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(file.bytes.length) });
    res.end(file.bytes);
  }

  private sendMessage(params: Record<string, unknown>): { value: unknown } | TelegramFailure {
    const text = String(params.text ?? '');
    if (text.trim() === '') return { errorCode: 400, description: 'Bad Request: message text is empty' };
    if (text.length > MAX_TEXT) return { errorCode: 400, description: 'Bad Request: message is too long' };
    if (params.parse_mode === 'HTML') {
      const problem = htmlProblem(text);
      if (problem) return { errorCode: 400, description: `Bad Request: can't parse entities: ${problem}` };
    }
    if (keyboardProblem(params.reply_markup)) return { errorCode: 400, description: 'Bad Request: BUTTON_DATA_INVALID' };
    const message = { message_id: this.nextMessageId++, date: now(), chat: { id: Number(params.chat_id), type: 'private' }, text };
    this.messages.set(`${String(params.chat_id)}:${message.message_id}`, text);
    if (params.reply_markup !== undefined) this.markups.set(`${String(params.chat_id)}:${message.message_id}`, params.reply_markup);
    return { value: message };
  }

  /** As the real Bot API: the message must exist, the text must change, fit and parse. */
  private editMessageText(params: Record<string, unknown>): { value: unknown } | TelegramFailure {
    const key = `${String(params.chat_id)}:${String(params.message_id)}`;
    const text = String(params.text ?? '');
    const current = this.messages.get(key);
    if (current === undefined) return { errorCode: 400, description: 'Bad Request: message to edit not found' };
    if (text.trim() === '') return { errorCode: 400, description: 'Bad Request: message text is empty' };
    if (text.length > MAX_TEXT) return { errorCode: 400, description: 'Bad Request: MESSAGE_TOO_LONG' };
    if (params.parse_mode === 'HTML') {
      const problem = htmlProblem(text);
      if (problem) return { errorCode: 400, description: `Bad Request: can't parse entities: ${problem}` };
    }
    if (text === current && JSON.stringify(params.reply_markup) === JSON.stringify(this.markups.get(key))) return { errorCode: 400, description: 'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message' };
    if (keyboardProblem(params.reply_markup)) return { errorCode: 400, description: 'Bad Request: BUTTON_DATA_INVALID' };
    this.messages.set(key, text);
    if (params.reply_markup === undefined) this.markups.delete(key);
    else this.markups.set(key, params.reply_markup);
    return { value: { message_id: Number(params.message_id), date: now(), edit_date: now(), chat: { id: Number(params.chat_id), type: 'private' }, text } };
  }

  /** Drafts exist only in private chats (positive chat ids); text of 0–4096 characters; a non-zero draft id. */
  private sendMessageDraft(params: Record<string, unknown>): { value: unknown } | TelegramFailure {
    if (!(Number(params.chat_id) > 0)) return { errorCode: 400, description: 'Bad Request: TEXTDRAFT_PEER_INVALID' };
    if (!Number.isInteger(Number(params.draft_id)) || Number(params.draft_id) === 0) return { errorCode: 400, description: 'Bad Request: draft_id must be non-zero' };
    if (String(params.text ?? '').length > MAX_TEXT) return { errorCode: 400, description: 'Bad Request: text is too long' };
    return { value: true };
  }

  private getUpdates(res: ServerResponse, params: Record<string, unknown>): void {
    const open = this.openPoll;
    if (open && !open.writableEnded && !open.destroyed) {
      // The open poll is over: it gets no update any more. Its 409 goes out once socket events
      // already on their way are read: a client that aborted that poll just before this call (grammY
      // confirms the offset with a new call after aborting, and so does a gateway handing over) has
      // closed its connection, and nobody is there to get the 409 — that is not two pollers.
      this.terminatedPolls.add(open);
      setTimeout(() => {
        if (open.writableEnded || open.destroyed) return;
        this.getUpdatesConflicts++;
        this.emit('conflict');
        reply(open, 409, { ok: false, error_code: 409, description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running' });
      }, POLL_CLOSE_SETTLE_MS);
    }
    const offset = Number(params.offset ?? 0);
    // Confirm: every update below `offset` is forgotten, as on the real server.
    if (offset > 0) while (this.updates.length > 0 && this.updates[0].update_id < offset) this.updates.shift();
    const limit = Number(params.limit ?? 100);
    const available = (): unknown[] => this.updates.filter((update) => update.update_id >= offset).slice(0, limit);
    const ready = available();
    const timeoutSeconds = Number(params.timeout ?? 0);
    if (ready.length > 0 || timeoutSeconds <= 0) return reply(res, 200, { ok: true, result: ready });
    this.openPoll = res;
    // Held for its whole timeout like on the real Bot API (Node's keep-alive timer would end it after 5 s).
    res.socket?.setTimeout(0);
    const finish = (): void => {
      if (this.openPoll === res) this.openPoll = undefined;
      clearTimeout(timer);
      this.off('update', onUpdate);
      this.off('closing', finish);
      if (!res.writableEnded && !res.destroyed && !this.terminatedPolls.has(res)) reply(res, 200, { ok: true, result: available() });
    };
    const onUpdate = (): void => finish();
    const timer = setTimeout(finish, timeoutSeconds * 1000);
    this.on('update', onUpdate);
    this.on('closing', finish);
    res.once('close', finish);
  }
}

/** Starts a {@link FakeTelegramServer} on a free port. */
export async function startFakeTelegram(options: FakeTelegramOptions = {}): Promise<FakeTelegramServer> {
  return new FakeTelegramServer(options).listen();
}

async function readParams(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks).toString('utf8');
  const query = Object.fromEntries(new URL(req.url ?? '/', 'http://x').searchParams);
  if (body === '') return query;
  if ((req.headers['content-type'] ?? '').includes('application/json')) return { ...query, ...(JSON.parse(body) as Record<string, unknown>) };
  return { ...query, ...Object.fromEntries(new URLSearchParams(body)) };
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function fail(res: ServerResponse, failure: TelegramFailure): void {
  const body: Record<string, unknown> = { ok: false, error_code: failure.errorCode, description: failure.description };
  if (failure.retryAfterSeconds !== undefined) body.parameters = { retry_after: failure.retryAfterSeconds };
  reply(res, failure.errorCode, body);
}

function now(): number {
  return Math.floor(Date.now() / 1000);
}

/** What Telegram's HTML parser would reject in `html`, or undefined. */
function htmlProblem(html: string): string | undefined {
  const stack: string[] = [];
  const tagRe = /<(\/?)([a-zA-Z-]*)[^>]*>|<|&(#?\w+;)?/g;
  for (let match = tagRe.exec(html); match; match = tagRe.exec(html)) {
    const token = match[0];
    if (token === '&') return `can't find end of the entity starting at byte offset ${match.index}`;
    if (token.startsWith('&')) continue;
    if (token === '<') return `unexpected end of name token at byte offset ${match.index}`;
    const [, closing, name] = match;
    if (!TELEGRAM_HTML_TAGS.has(name.toLowerCase())) return `unsupported start tag "${name}" at byte offset ${match.index}`;
    if (!closing) stack.push(name.toLowerCase());
    else if (stack.pop() !== name.toLowerCase()) return `can't find end tag corresponding to start tag "${name}"`;
  }
  return stack.length > 0 ? `can't find end tag corresponding to start tag "${stack[stack.length - 1]}"` : undefined;
}

/** What the Bot API refuses in setMyCommands: 1–100 commands, names `[a-z0-9_]{1,32}`, descriptions 1–256 characters. */
function commandsProblem(raw: unknown): TelegramFailure | undefined {
  const commands = typeof raw === 'string' ? (JSON.parse(raw) as unknown) : raw;
  if (!Array.isArray(commands) || commands.length > 100) return { errorCode: 400, description: 'Bad Request: commands must be an array of at most 100 BotCommand' };
  for (const entry of commands as Array<{ command?: unknown; description?: unknown }>) {
    if (typeof entry.command !== 'string' || !/^[a-z0-9_]{1,32}$/.test(entry.command)) return { errorCode: 400, description: 'Bad Request: BOT_COMMAND_INVALID' };
    if (typeof entry.description !== 'string' || entry.description.length < 1 || entry.description.length > 256) return { errorCode: 400, description: 'Bad Request: BOT_COMMAND_DESCRIPTION_INVALID' };
  }
  return undefined;
}

/** Whether an inline keyboard has a button whose callback_data is empty or over 64 bytes. */
function keyboardProblem(markup: unknown): boolean {
  const rows = (markup as { inline_keyboard?: unknown } | undefined)?.inline_keyboard;
  if (!Array.isArray(rows)) return false;
  return rows.some((row) => !Array.isArray(row) || row.some((button: { callback_data?: unknown }) => {
    const data = button.callback_data;
    return data !== undefined && (typeof data !== 'string' || data.length === 0 || Buffer.byteLength(data) > 64);
  }));
}
