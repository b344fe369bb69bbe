/**
 * A fake Discord: REST v10 over HTTP and gateway v10 over WebSocket (`ws`), on 127.0.0.1 port 0.
 * discord.js is pointed at it with `rest: { api: fake.apiRoot }`; the gateway URL comes from
 * GET /gateway/bot, as on the real service. Gateway: HELLO, IDENTIFY → READY, GUILD_CREATE,
 * heartbeat ACK, MESSAGE_CREATE on demand (malformed ones too: `override`, `dispatchRaw`), RESUME of the session READY named → RESUMED (another
 * session id, or one `expireSessions` ended: op 9 Invalid Session); like the real gateway it can close the connections
 * (`closeGateway`, e.g. 4000, which a client resumes) and refuse new ones for a while
 * (`refuseGateway`: the upgrade is answered 503). REST: /gateway/bot, /users/@me, GET /channels/:id,
 * POST /channels/:id/messages (2000-character limit; scripted 429s with retry_after),
 * PATCH and DELETE /channels/:id/messages/:id (the message must exist: 10008 Unknown Message; the
 * same 2000-character limit), POST /channels/:id/typing (204 without a content type), and a CDN
 * route serving attachments (`/attachments/<channel>/<id>/<filename>`, no bot token, as the real
 * CDN). Records every call and keeps the current content of every message the bot sent (`messageContent`).
 * Message components and button presses (INTERACTION_CREATE, the interaction callback and webhook
 * routes) as Discord checks and answers them: `discord-interactions.ts`.
 */
import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { CHANNEL_TYPES, channelObject, FAKE_DISCORD_IDS, guildCreate, messageObject, user } from './discord-objects.js';
import { componentsProblem, FakeInteractions, type ComponentMessage, type InteractionHost } from './discord-interactions.js';

export { FAKE_DISCORD_IDS } from './discord-objects.js';

/** One recorded REST call. */
export interface DiscordCall {
  method: string;
  /** Path after `/api/v10`, e.g. `/channels/123/messages`. */
  path: string;
  body: Record<string, unknown> | undefined;
  atMs: number;
}

/** A scripted REST failure. */
export interface DiscordFailure {
  status: number;
  /** Discord JSON error code (e.g. 10003 Unknown Channel, 50007 Cannot send messages to this user). */
  code?: number;
  message?: string;
  /** For 429: `retry_after` in seconds (also sent as the Retry-After header, rounded up). */
  retryAfterSeconds?: number;
}

/** Options of {@link startFakeDiscord}. */
export interface FakeDiscordOptions {
  token?: string;
  /** HELLO's heartbeat_interval, in ms. Default 41 250. */
  heartbeatIntervalMs?: number;
  /** How long an interaction waits for its first answer, ms. Default 3000, as on Discord. */
  interactionAnswerMs?: number;
}

const MAX_CONTENT = 2000;

/** The running fake; see the module comment. */
export class FakeDiscordServer extends EventEmitter {
  readonly calls: DiscordCall[] = [];
  /** Every gateway payload received from clients. */
  readonly gatewayReceived: Array<{ op: number; d: unknown }> = [];
  private sessionCount = 0;
  private sessionId = 'fake-session-0';
  readonly token: string;
  /** The most identified gateway sessions that were open at once (two would mean two gateways connected). */
  maxOpenSessions = 0;
  apiRoot = '';
  private readonly heartbeatIntervalMs: number;
  private readonly failures: Array<{ method: string; path: RegExp; failure: DiscordFailure }> = [];
  private readonly holds: Array<{ method: string; path: RegExp; released: Promise<void> }> = [];
  /** Messages the bot created with a nonce, by `channel:nonce` (Discord keeps them a few minutes). */
  private readonly nonces = new Map<string, Record<string, unknown>>();
  /** Sends answered with the message an earlier send with the same nonce created. */
  nonceRepeats = 0;
  /** Every message of each channel (users' and the bot's), oldest first: what GET /channels/:id/messages pages through. */
  private readonly history = new Map<string, Array<Record<string, unknown>>>();
  private readonly sockets = new Set<{ ws: WebSocket; seq: number }>();
  /** Current content of every message the bot sent, by message id (deleted ones removed). */
  readonly messages = new Map<string, string>();
  /** Current components (action rows) of the bot's messages that have any, by message id. */
  readonly components = new Map<string, unknown[]>();
  /** Button presses and their answers (`interactions.answers`). */
  readonly interactions: FakeInteractions;
  private readonly interactionHost: InteractionHost = {
    applicationId: FAKE_DISCORD_IDS.application,
    snowflake: () => this.snowflake(),
    message: (id) => this.componentMessage(id),
    update: (id, content, components) => {
      if (content !== undefined) this.messages.set(id, content);
      if (components !== undefined) this.setComponents(id, components);
    },
    messageObject: (message) => ({ ...messageObject(message.id, message.channelId, message.content, false), components: message.components }),
  };
  private nextId = 1n;
  private readonly cdn = new Map<string, Buffer>();
  /** CDN paths served. */
  readonly cdnDownloads: string[] = [];
  private server!: Server;
  private wss!: WebSocketServer;
  private refusing = false;
  private revoked = false;

  constructor(options: FakeDiscordOptions = {}) {
    super();
    this.token = options.token ?? 'MTAwMDAwMDAwMDAwMDAwMDAx.FakeTk.discord-test-token-0123456789';
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 41_250;
    this.interactions = new FakeInteractions(this.interactionHost, options.interactionAnswerMs);
  }

  /** Starts listening on a free port. */
  async listen(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    // verifyClient answers the upgrade itself: a refused one gets 503, as from a gateway that is down.
    this.wss = new WebSocketServer({ server: this.server, verifyClient: (_info, done) => (this.refusing ? done(false, 503, 'Service Unavailable') : done(true)) });
    this.wss.on('connection', (ws) => this.onConnection(ws));
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.apiRoot = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api`;
    return this;
  }

  /** Closes every socket and the server. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.ws.terminate();
    this.wss.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Identified gateway sessions open now (the real Discord sends every event to each of them). */
  get openSessions(): number {
    return this.sockets.size;
  }

  /** Closes every identified gateway connection with `code` (4000 Unknown error: the client resumes). */
  closeGateway(code = 4000, reason = 'Unknown error'): void {
    for (const socket of this.sockets) socket.ws.close(code, reason);
  }

  /** Forgets the sessions READY named so far (Discord expires them): a RESUME is answered op 9 Invalid Session, and the client identifies anew. */
  expireSessions(): void {
    this.sessionId = `fake-session-${++this.sessionCount}`;
  }

  /** While `refuse` holds, new gateway connections are refused (HTTP 503 to the upgrade). */
  refuseGateway(refuse: boolean): void {
    this.refusing = refuse;
  }

  /** Revokes the bot token (reset in the developer portal): every REST call answers 401 from now on; open gateway connections stay. */
  revokeToken(): void {
    this.revoked = true;
  }

  /** Whether a client has identified (READY was sent). */
  get identified(): boolean {
    return this.gatewayReceived.some((payload) => payload.op === 2);
  }

  /** Dispatches MESSAGE_CREATE to every identified client. Returns the message id. */
  dispatchMessage(options: {
    content: string;
    where: 'dm' | 'guild' | 'thread';
    author?: { id: string; username: string; bot?: boolean };
    mentions?: string[];
    replyTo?: { messageId: string; authorId: string };
    attachments?: Array<{ filename: string; content_type: string; bytes?: Buffer; size?: number }>;
    /** Fields sent as given, over the well-formed ones (a malformed payload: `{ mentions: 'x' }`). */
    override?: Record<string, unknown>;
  }): string {
    const id = this.snowflake();
    const author = { id: FAKE_DISCORD_IDS.user, username: 'ada', ...options.author };
    const channelId = { dm: FAKE_DISCORD_IDS.dmChannel, guild: FAKE_DISCORD_IDS.textChannel, thread: FAKE_DISCORD_IDS.thread }[options.where];
    const data: Record<string, unknown> = {
      id,
      channel_id: channelId,
      channel_type: { dm: CHANNEL_TYPES.dm, guild: CHANNEL_TYPES.text, thread: CHANNEL_TYPES.publicThread }[options.where],
      author: user(author.id, author.username, author.bot ?? false),
      content: options.content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: (options.mentions ?? []).map((userId) => user(userId, userId === FAKE_DISCORD_IDS.bot ? 'chatgate' : 'someone', userId === FAKE_DISCORD_IDS.bot)),
      mention_roles: [],
      attachments: (options.attachments ?? []).map((a) => this.attachment(channelId, a)),
      embeds: [],
      pinned: false,
      type: options.replyTo ? 19 : 0,
      flags: 0,
    };
    if (options.where !== 'dm') {
      data.guild_id = FAKE_DISCORD_IDS.guild;
      data.member = { roles: [], joined_at: new Date(0).toISOString(), deaf: false, mute: false, flags: 0 };
    }
    if (options.replyTo) {
      data.message_reference = { type: 0, message_id: options.replyTo.messageId, channel_id: channelId, guild_id: data.guild_id };
      data.referenced_message = null;
      if (!(options.mentions ?? []).includes(options.replyTo.authorId)) (data.mentions as unknown[]).push(user(options.replyTo.authorId, 'replied', options.replyTo.authorId === FAKE_DISCORD_IDS.bot));
    }
    Object.assign(data, options.override);
    this.remember(channelId, data);
    this.dispatch('MESSAGE_CREATE', data);
    return id;
  }

  /**
   * Dispatches INTERACTION_CREATE: `user` (default ada) pressed button `customId` of the bot's message
   * `messageId`. Returns the interaction id. @throws when that message has no such button.
   */
  pressButton(messageId: string, customId: string, presser: { id: string; username: string } = { id: FAKE_DISCORD_IDS.user, username: 'ada' }): string {
    const channelId = this.componentMessage(messageId)?.channelId ?? '';
    const channel = channelObject(channelId);
    const where = channel && channel.type !== CHANNEL_TYPES.dm ? { guildId: FAKE_DISCORD_IDS.guild, channel } : { channel: channel ?? {} };
    const payload = this.interactions.press(messageId, customId, where, user(presser.id, presser.username, false));
    this.dispatch('INTERACTION_CREATE', payload);
    return String(payload.id);
  }

  /** Dispatches event `event` with `data` exactly as given (`null` included) to every identified client. */
  dispatchRaw(event: string, data: unknown): void {
    this.dispatch(event, data);
  }

  /** An attachment object; its bytes (default 10 bytes of text) are served by the CDN route. */
  private attachment(channelId: string, a: { filename: string; content_type: string; bytes?: Buffer; size?: number }): Record<string, unknown> {
    const id = this.snowflake();
    const url = `${this.apiRoot.replace(/\/api$/, '')}/attachments/${channelId}/${id}/${encodeURIComponent(a.filename)}`;
    this.cdn.set(new URL(url).pathname, a.bytes ?? Buffer.from('0123456789'));
    return { id, filename: a.filename, content_type: a.content_type, size: a.size ?? a.bytes?.length ?? 10, url, proxy_url: url };
  }

  /** Answers the next call of `method` on a path matching `path` with `failure`. */
  failNext(method: string, path: RegExp, failure: DiscordFailure): void {
    this.failures.push({ method, path, failure });
  }

  /**
   * Holds the next call of `method` on a path matching `path` (a slow platform): it is answered,
   * as usual, only once the returned function is called.
   */
  holdNext(method: string, path: RegExp): () => void {
    let release!: () => void;
    this.holds.push({ method, path, released: new Promise<void>((resolve) => (release = resolve)) });
    return release;
  }

  /** REST calls matching `method` and `path`. */
  callsOf(method: string, path: RegExp): DiscordCall[] {
    return this.calls.filter((call) => call.method === method && path.test(call.path));
  }

  /** Resolves with the `count`-th REST call matching (1-based), waiting for it if needed. */
  async waitForCall(method: string, path: RegExp, count = 1): Promise<DiscordCall> {
    for (;;) {
      const calls = this.callsOf(method, path);
      if (calls.length >= count) return calls[count - 1];
      await once(this, 'call');
    }
  }

  /** The current content of message `messageId`, or undefined (never sent, or deleted). */
  messageContent(messageId: string): string | undefined {
    return this.messages.get(messageId);
  }

  /** Resolves once a gateway payload with `op` has been received `count` times. */
  async waitForGateway(op: number, count = 1): Promise<void> {
    while (this.gatewayReceived.filter((payload) => payload.op === op).length < count) await once(this, 'gateway');
  }

  /** The newest message of `channelId`'s history (what GUILD_CREATE tells a connecting client), or null. */
  private lastMessageId(channelId: string): string | null {
    const last = this.history.get(channelId)?.at(-1);
    return typeof last?.id === 'string' ? last.id : null;
  }

  private remember(channelId: string, message: Record<string, unknown>): void {
    const list = this.history.get(channelId) ?? [];
    list.push(message);
    this.history.set(channelId, list);
  }

  /** GET /channels/:id/messages: `after` → the `limit` (≤ 100, default 50) oldest messages after that id, newest first, as Discord pages. */
  private listMessages(channelId: string, query: URLSearchParams, res: ServerResponse): void {
    const limit = Number(query.get('limit') ?? '50');
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return json(res, 400, { message: 'Invalid Form Body', code: 50035 });
    const after = query.get('after');
    const all = (this.history.get(channelId) ?? []).map((m): Record<string, unknown> => ({ ...m, content: typeof m.id === 'string' && this.messages.has(m.id) ? this.messages.get(m.id) : m.content }));
    if (after === null) return json(res, 200, all.slice(-limit).reverse());
    if (!/^\d+$/.test(after)) return json(res, 400, { message: 'Invalid Form Body', code: 50035 });
    json(res, 200, all.filter((m) => BigInt(m.id as string) > BigInt(after)).slice(0, limit).reverse());
  }

  /** A message of the bot with its channel and components, or undefined. */
  private componentMessage(id: string): ComponentMessage | undefined {
    const content = this.messages.get(id);
    if (content === undefined) return undefined;
    for (const [channelId, list] of this.history) {
      if (list.some((m) => m.id === id)) return { id, channelId, content, components: this.components.get(id) ?? [] };
    }
    return undefined;
  }

  private setComponents(id: string, components: unknown[]): void {
    if (components.length === 0) this.components.delete(id);
    else this.components.set(id, components);
  }

  private snowflake(): string {
    // Timestamp-based like real snowflakes, so discord.js derives sane creation dates.
    return String(((BigInt(Date.now()) - 1420070400000n) << 22n) + this.nextId++);
  }

  private dispatch(event: string, data: unknown): void {
    for (const socket of this.sockets) this.sendDispatch(socket, event, data);
  }

  private sendDispatch(socket: { ws: WebSocket; seq: number }, event: string, data: unknown): void {
    socket.seq += 1;
    socket.ws.send(JSON.stringify({ op: 0, t: event, s: socket.seq, d: data }));
  }

  private onConnection(ws: WebSocket): void {
    const socket = { ws, seq: 0 };
    ws.send(JSON.stringify({ op: 10, s: null, t: null, d: { heartbeat_interval: this.heartbeatIntervalMs } }));
    ws.on('message', (raw) => {
      const payload = JSON.parse(String(raw)) as { op: number; d: Record<string, unknown> };
      this.gatewayReceived.push(payload);
      if (payload.op === 1) ws.send(JSON.stringify({ op: 11, s: null, t: null, d: null }));
      if (payload.op === 2) this.onIdentify(socket, payload.d);
      if (payload.op === 6) this.onResume(socket, payload.d);
      this.emit('gateway', payload.op);
    });
    ws.on('close', () => {
      if (this.sockets.delete(socket)) this.emit('sessions', this.sockets.size);
    });
  }

  private onIdentify(socket: { ws: WebSocket; seq: number }, identify: Record<string, unknown>): void {
    if (identify.token !== this.token) {
      socket.ws.close(4004, 'Authentication failed.');
      return;
    }
    this.sockets.add(socket);
    this.maxOpenSessions = Math.max(this.maxOpenSessions, this.sockets.size);
    this.emit('sessions', this.sockets.size);
    const resumeUrl = this.apiRoot.replace(/^http/, 'ws').replace(/\/api$/, '');
    this.sendDispatch(socket, 'READY', {
      v: 10,
      user: user(FAKE_DISCORD_IDS.bot, 'chatgate', true),
      guilds: [{ id: FAKE_DISCORD_IDS.guild, unavailable: true }],
      session_id: this.sessionId,
      resume_gateway_url: resumeUrl,
      shard: [0, 1],
      application: { id: FAKE_DISCORD_IDS.application, flags: 0 },
    });
    this.sendDispatch(socket, 'GUILD_CREATE', guildCreate((id) => this.lastMessageId(id)));
  }

  /** RESUME: the session READY named, with the bot's token, is resumed (nothing was missed here); another is invalid. */
  private onResume(socket: { ws: WebSocket; seq: number }, resume: Record<string, unknown>): void {
    if (resume.token !== this.token) {
      socket.ws.close(4004, 'Authentication failed.');
      return;
    }
    if (resume.session_id !== this.sessionId) {
      socket.ws.send(JSON.stringify({ op: 9, s: null, t: null, d: false }));
      return;
    }
    socket.seq = Number(resume.seq ?? 0);
    this.sockets.add(socket);
    this.maxOpenSessions = Math.max(this.maxOpenSessions, this.sockets.size);
    this.emit('sessions', this.sockets.size);
    this.sendDispatch(socket, 'RESUMED', {});
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const method = req.method ?? 'GET';
    const cdnPath = (req.url ?? '/').split('?')[0];
    if (cdnPath.startsWith('/attachments/')) return this.serveCdn(cdnPath, res);
    const path = (req.url ?? '/').split('?')[0].replace(/^\/api\/v10/, '');
    const query = new URL(req.url ?? '/', 'http://fake').searchParams;
    // Interaction answers carry their token in the path, never the bot's (discord.js sends them with `auth: false`).
    if (this.interactions.owns(path)) {
      const body = raw && (req.headers['content-type'] ?? '').includes('json') ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
      this.calls.push({ method, path, body, atMs: Date.now() });
      this.interactions.handle(method, path, body, res);
      return void this.emit('call');
    }
    if (this.revoked || req.headers.authorization !== `Bot ${this.token}`) {
      this.emit('unauthorized');
      return json(res, 401, { message: '401: Unauthorized', code: 0 });
    }
    const body = raw && (req.headers['content-type'] ?? '').includes('json') ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
    this.calls.push({ method, path, body, atMs: Date.now() });
    this.emit('call');
    const held = this.holds.findIndex((h) => h.method === method && h.path.test(path));
    if (held !== -1) await this.holds.splice(held, 1)[0].released;
    const index = this.failures.findIndex((f) => f.method === method && f.path.test(path));
    if (index !== -1) return fail(res, this.failures.splice(index, 1)[0].failure);
    this.route(method, path, body, res, query);
    // Again once answered: a waiter on the fake's state (messages) sees the change.
    this.emit('call');
  }

  private serveCdn(path: string, res: ServerResponse): void {
    const bytes = this.cdn.get(path);
    if (!bytes) return json(res, 404, { message: '404: Not Found', code: 0 });
    this.cdnDownloads.push(path);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) });
    res.end(bytes);
  }

  private route(method: string, path: string, body: Record<string, unknown> | undefined, res: ServerResponse, query: URLSearchParams): void {
    const channel = /^\/channels\/(\d+)(\/messages|\/typing)?$/.exec(path);
    const oneMessage = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path);
    if (oneMessage) return this.routeMessage(method, oneMessage[1]!, oneMessage[2]!, body, res);
    if (method === 'GET' && path === '/gateway/bot') {
      const url = this.apiRoot.replace(/^http/, 'ws').replace(/\/api$/, '');
      return json(res, 200, { url, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 } });
    }
    if (method === 'GET' && path === '/users/@me') return json(res, 200, user(FAKE_DISCORD_IDS.bot, 'chatgate', true));
    if (!channel) return json(res, 404, { message: '404: Not Found', code: 0 });
    const known = channelObject(channel[1]);
    if (!known) return json(res, 404, { message: 'Unknown Channel', code: 10003 });
    if (method === 'GET' && channel[2] === undefined) return json(res, 200, known);
    if (method === 'POST' && channel[2] === '/typing') {
      res.writeHead(204);
      return void res.end();
    }
    if (method === 'POST' && channel[2] === '/messages') return this.createMessage(channel[1], body, res);
    if (method === 'GET' && channel[2] === '/messages') return this.listMessages(channel[1], query, res);
    json(res, 405, { message: '405: Method Not Allowed', code: 0 });
  }

  /** PATCH (edit) and DELETE of one message the bot sent. */
  private routeMessage(method: string, channelId: string, messageId: string, body: Record<string, unknown> | undefined, res: ServerResponse): void {
    if (!channelObject(channelId)) return json(res, 404, { message: 'Unknown Channel', code: 10003 });
    if (!this.messages.has(messageId)) return json(res, 404, { message: 'Unknown Message', code: 10008 });
    if (method === 'DELETE') {
      this.messages.delete(messageId);
      this.components.delete(messageId);
      res.writeHead(204);
      return void res.end();
    }
    if (method !== 'PATCH') return json(res, 405, { message: '405: Method Not Allowed', code: 0 });
    const content = String(body?.content ?? '');
    const refused = contentProblem(content) ?? componentsProblem(body?.components);
    if (refused) return json(res, 400, refused);
    this.messages.set(messageId, content);
    if (Array.isArray(body?.components)) this.setComponents(messageId, body.components);
    json(res, 200, messageObject(messageId, channelId, content, true));
  }

  private createMessage(channelId: string, body: Record<string, unknown> | undefined, res: ServerResponse): void {
    const content = String(body?.content ?? '');
    const refused = contentProblem(content) ?? componentsProblem(body?.components);
    if (refused) return json(res, 400, refused);
    const nonce = body?.nonce;
    if (nonce !== undefined && (typeof nonce !== 'string' || nonce.length > 25)) return json(res, 400, { message: 'Invalid Form Body', code: 50035, errors: { nonce: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 25 or fewer in length.' }] } } });
    // enforce_nonce: a message of the bot with this nonce in this channel, created a moment ago, is returned instead of posting another.
    const earlier = body?.enforce_nonce === true && typeof nonce === 'string' ? this.nonces.get(`${channelId}:${nonce}`) : undefined;
    if (earlier) {
      this.nonceRepeats++;
      return json(res, 200, earlier);
    }
    const id = this.snowflake();
    this.messages.set(id, content);
    if (Array.isArray(body?.components)) this.setComponents(id, body.components);
    const message = {
      id, channel_id: channelId, content, components: body?.components ?? [], author: user(FAKE_DISCORD_IDS.bot, 'chatgate', true), timestamp: new Date().toISOString(),
      edited_timestamp: null, tts: false, mention_everyone: false, mentions: [], mention_roles: [], attachments: [], embeds: [], pinned: false, type: 0, flags: 0,
      message_reference: body?.message_reference,
    };
    this.remember(channelId, message);
    if (typeof nonce === 'string') this.nonces.set(`${channelId}:${nonce}`, message);
    json(res, 200, message);
  }
}

/** Starts a {@link FakeDiscordServer} on a free port. */
export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscordServer> {
  return new FakeDiscordServer(options).listen();
}

/** What Discord answers to a message content it refuses: empty (50006), over 2000 characters (50035). */
function contentProblem(content: string): Record<string, unknown> | undefined {
  if (content === '') return { message: 'Cannot send an empty message', code: 50006 };
  if ([...content].length > MAX_CONTENT) return { message: 'Invalid Form Body', code: 50035, errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] } } };
  return undefined;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function fail(res: ServerResponse, failure: DiscordFailure): void {
  if (failure.status === 429) {
    const seconds = failure.retryAfterSeconds ?? 1;
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(Math.ceil(seconds)), 'x-ratelimit-scope': 'user' });
    return void res.end(JSON.stringify({ message: 'You are being rate limited.', retry_after: seconds, global: false }));
  }
  json(res, failure.status, { message: failure.message ?? 'error', code: failure.code ?? 0 });
}
