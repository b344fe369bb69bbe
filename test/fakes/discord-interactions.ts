/**
 * The fake Discord's message components and interactions, as the real API behaves: message
 * components are checked as Discord checks them (action rows of 1–5 buttons, a `custom_id` of at most
 * 100 characters unique in the message, a label of at most 80; else 400 Invalid Form Body 50035); a
 * button press is an `INTERACTION_CREATE` (type 3, component type 2) whose token answers it once,
 * within 3 s, at `POST /interactions/:id/:token/callback` without the bot token (4 with a message,
 * ephemeral with flags 64; 6 deferred update; 7 UPDATE_MESSAGE editing the message the button is
 * on). A second answer is 400 40060 (already acknowledged); an unknown or late one 404 10062 (Unknown
 * interaction). After an answer, for 15 min, the token edits the original message (`PATCH
 * /webhooks/:app/:token/messages/@original`) and sends follow-ups (`POST /webhooks/:app/:token`).
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/** How long Discord waits for an interaction's first answer, ms. */
export const INTERACTION_ANSWER_MS = 3000;
/** How long an interaction token edits and follows up after the answer, ms. */
const TOKEN_LIFETIME_MS = 15 * 60_000;
const MAX_CONTENT = 2000;
const RESPONSE_TYPES = new Set([4, 5, 6, 7]);

/** A message as the interactions need it: where it is, its content and its components. */
export interface ComponentMessage {
  id: string;
  channelId: string;
  content: string;
  components: unknown[];
}

/** One answer an interaction got (callback, original edit or follow-up), in order. */
export interface InteractionAnswer {
  interactionId: string;
  kind: 'callback' | 'edit-original' | 'follow-up';
  /** The callback type (4, 5, 6, 7), absent for webhook calls. */
  type?: number;
  content?: string;
  components?: unknown[];
  ephemeral: boolean;
  atMs: number;
}

/** What the interactions need from the fake server. */
export interface InteractionHost {
  applicationId: string;
  snowflake(): string;
  message(id: string): ComponentMessage | undefined;
  update(id: string, content: string | undefined, components: unknown[] | undefined): void;
  messageObject(message: ComponentMessage): Record<string, unknown>;
}

interface Pending {
  id: string;
  token: string;
  messageId: string;
  createdAtMs: number;
  answeredAtMs?: number;
}

/** What Discord answers to components it refuses (50035 with the path of the problem), or undefined. */
export function componentsProblem(components: unknown): Record<string, unknown> | undefined {
  if (components === undefined) return undefined;
  const invalid = (path: string, message: string) => ({ message: 'Invalid Form Body', code: 50035, errors: { components: { [path]: { _errors: [{ code: 'INVALID', message }] } } } });
  if (!Array.isArray(components) || components.length > 5) return invalid('_', 'Must be an array of at most 5 action rows.');
  const ids = new Set<string>();
  for (const [r, row] of components.entries()) {
    const inner = (row as { type?: unknown; components?: unknown })?.components;
    if ((row as { type?: unknown })?.type !== 1 || !Array.isArray(inner) || inner.length < 1 || inner.length > 5) return invalid(`${r}`, 'An action row holds 1 to 5 components.');
    for (const [c, button] of (inner as Array<Record<string, unknown>>).entries()) {
      const at = `${r}.components.${c}`;
      if (button?.type !== 2) return invalid(at, 'Only buttons are supported here.');
      if (typeof button.style !== 'number' || button.style < 1 || button.style > 5) return invalid(`${at}.style`, 'Value must be one of {1, 2, 3, 4, 5}.');
      if (typeof button.label !== 'string' || [...button.label].length > 80) return invalid(`${at}.label`, 'Must be 80 or fewer in length.');
      if (button.style === 5) {
        if (typeof button.url !== 'string') return invalid(`${at}.url`, 'A link button needs a url.');
        continue;
      }
      const id = button.custom_id;
      if (typeof id !== 'string' || id.length < 1 || id.length > 100) return invalid(`${at}.custom_id`, 'Must be between 1 and 100 in length.');
      if (ids.has(id)) return invalid(`${at}.custom_id`, 'Component custom id cannot be duplicated');
      ids.add(id);
    }
  }
  return undefined;
}

/** The interactions of the fake Discord; see the module comment. */
export class FakeInteractions {
  readonly answers: InteractionAnswer[] = [];
  private readonly pending = new Map<string, Pending>();

  /** `answerWithinMs`: how long an interaction waits for its first answer (Discord: {@link INTERACTION_ANSWER_MS}). */
  constructor(private readonly host: InteractionHost, private readonly answerWithinMs = INTERACTION_ANSWER_MS, private readonly now: () => number = Date.now) {}

  /** The `INTERACTION_CREATE` payload of `user` pressing the button `customId` of message `messageId`. @throws when the message has no such button. */
  press(messageId: string, customId: string, where: { guildId?: string; channel: Record<string, unknown> }, user: Record<string, unknown>): Record<string, unknown> {
    const message = this.host.message(messageId);
    const buttons = (message?.components ?? []).flatMap((row) => ((row as { components?: unknown[] }).components ?? []) as Array<{ custom_id?: string }>);
    if (!message || !buttons.some((button) => button.custom_id === customId)) throw new Error(`message ${messageId} has no button ${customId}: nobody can press it`);
    const id = this.host.snowflake();
    const token = `aW50ZXJhY3Rpb246${randomBytes(24).toString('base64url')}`;
    this.pending.set(id, { id, token, messageId, createdAtMs: this.now() });
    const payload: Record<string, unknown> = {
      id, application_id: this.host.applicationId, type: 3, token, version: 1,
      data: { custom_id: customId, component_type: 2 },
      channel_id: message.channelId, channel: where.channel, message: this.host.messageObject(message),
      app_permissions: '2248473465835073', locale: 'en-US', entitlements: [], authorizing_integration_owners: { 0: where.guildId ?? '0' },
      context: where.guildId ? 0 : 1, attachment_size_limit: 10_485_760,
    };
    if (where.guildId) {
      payload.guild_id = where.guildId;
      payload.guild_locale = 'en-US';
      payload.member = { user, roles: [], joined_at: new Date(0).toISOString(), deaf: false, mute: false, flags: 0, permissions: '2248473465835073' };
    } else {
      payload.user = user;
    }
    return payload;
  }

  /** Whether `path` is one of the interaction routes (answered without the bot token). */
  owns(path: string): boolean {
    return /^\/(interactions|webhooks)\//.test(path);
  }

  /** Answers one interaction route. */
  handle(method: string, rawPath: string, body: Record<string, unknown> | undefined, res: ServerResponse): void {
    const path = decodeURIComponent(rawPath); // discord.js sends `@original` as `%40original`
    const callback = /^\/interactions\/(\d+)\/([\w-]+)\/callback$/.exec(path);
    if (callback && method === 'POST') return this.callback(callback[1]!, callback[2]!, body, res);
    const webhook = /^\/webhooks\/(\d+)\/([\w-]+)(\/messages\/@original)?$/.exec(path);
    if (!webhook) return json(res, 404, { message: '404: Not Found', code: 0 });
    const entry = [...this.pending.values()].find((p) => p.token === webhook[2]);
    if (webhook[1] !== this.host.applicationId || !entry) return json(res, 404, { message: 'Unknown Webhook', code: 10015 });
    if (entry.answeredAtMs === undefined || this.now() - entry.answeredAtMs > TOKEN_LIFETIME_MS) return json(res, 401, { message: 'Invalid Webhook Token', code: 50027 });
    const problem = contentProblem(body) ?? componentsProblem(body?.components);
    if (problem) return json(res, 400, problem);
    if (webhook[3] && method === 'PATCH') {
      this.host.update(entry.messageId, body?.content as string | undefined, body?.components as unknown[] | undefined);
      this.record(entry.id, 'edit-original', body);
      return json(res, 200, this.host.messageObject(this.host.message(entry.messageId)!));
    }
    if (!webhook[3] && method === 'POST') {
      this.record(entry.id, 'follow-up', body);
      const message = { id: this.host.snowflake(), channelId: this.host.message(entry.messageId)!.channelId, content: String(body?.content ?? ''), components: [] };
      return json(res, 200, { ...this.host.messageObject(message), flags: isEphemeral(body) ? 64 : 0, webhook_id: this.host.applicationId });
    }
    json(res, 405, { message: '405: Method Not Allowed', code: 0 });
  }

  private callback(id: string, token: string, body: Record<string, unknown> | undefined, res: ServerResponse): void {
    const entry = this.pending.get(id);
    if (!entry || entry.token !== token) return json(res, 404, { message: 'Unknown interaction', code: 10062 });
    if (entry.answeredAtMs !== undefined) return json(res, 400, { message: 'Interaction has already been acknowledged.', code: 40060 });
    if (this.now() - entry.createdAtMs >= this.answerWithinMs) return json(res, 404, { message: 'Unknown interaction', code: 10062 });
    const type = body?.type;
    if (typeof type !== 'number' || !RESPONSE_TYPES.has(type)) return json(res, 400, { message: 'Invalid Form Body', code: 50035, errors: { type: { _errors: [{ code: 'BASE_TYPE_CHOICES', message: 'Value must be one of {4, 5, 6, 7}.' }] } } });
    const data = (body?.data ?? undefined) as Record<string, unknown> | undefined;
    const problem = type === 4 || type === 7 ? contentProblem(data, type === 4) ?? componentsProblem(data?.components) : undefined;
    if (problem) return json(res, 400, problem);
    entry.answeredAtMs = this.now();
    if (type === 7) this.host.update(entry.messageId, data?.content as string | undefined, data?.components as unknown[] | undefined);
    this.record(id, 'callback', data, type);
    res.writeHead(204);
    res.end();
  }

  private record(interactionId: string, kind: InteractionAnswer['kind'], data: Record<string, unknown> | undefined, type?: number): void {
    this.answers.push({
      interactionId, kind, ...(type === undefined ? {} : { type }), ...(typeof data?.content === 'string' ? { content: data.content } : {}),
      ...(Array.isArray(data?.components) ? { components: data.components } : {}), ephemeral: isEphemeral(data), atMs: this.now(),
    });
  }
}

function isEphemeral(data: Record<string, unknown> | undefined): boolean {
  return typeof data?.flags === 'number' && (data.flags & 64) === 64;
}

/** A message body Discord refuses: over 2000 characters, or (when required) without content or components. */
function contentProblem(data: Record<string, unknown> | undefined, required = false): Record<string, unknown> | undefined {
  const content = data?.content;
  if (content !== undefined && content !== null && typeof content !== 'string') return { message: 'Invalid Form Body', code: 50035, errors: { content: { _errors: [{ code: 'BASE_TYPE_STRING', message: 'Must be a string.' }] } } };
  if (typeof content === 'string' && [...content].length > MAX_CONTENT) return { message: 'Invalid Form Body', code: 50035, errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] } } };
  if (required && !content && !(Array.isArray(data?.components) && data.components.length > 0)) return { message: 'Cannot send an empty message', code: 50006 };
  return undefined;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
