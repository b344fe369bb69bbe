/**
 * The pure part of a `POST /v1/chat/completions` request: its body checked, the session it names,
 * and the new input it carries (the rule in README.md, "What is new in a request").
 */
import { z } from 'zod';

/** Session names (`X-Chatgate-Session`, `metadata.session`, `user`): 1–64 characters of `A-Za-z0-9_.@-`. */
export const SESSION_RE = /^[\w.@-]{1,64}$/;

/** The session a request without a session name talks in. */
export const DEFAULT_SESSION = 'default';

/** A request's body, as far as chatgate reads it; other OpenAI fields are accepted and ignored. */
export interface CompletionRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** The new user input (the trailing user messages, joined by a blank line). */
  text: string;
  /** The session name the body gives (`metadata.session`, else `user`), if any. */
  session?: string;
}

/** A body chatgate cannot take: `param` names the field, as OpenAI's errors do. */
export interface RequestProblem {
  message: string;
  param: string | null;
}

const textPart = z.object({ type: z.literal('text'), text: z.string() }).loose();
const content = z.union([z.string(), z.array(z.object({ type: z.string() }).loose()), z.null()]).optional();
const message = z.object({ role: z.string(), content }).loose();
const body = z.object({
  model: z.string().min(1, 'must be a model name').optional(),
  messages: z.array(message).min(1, 'must hold at least one message'),
  stream: z.boolean().nullable().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).loose().nullable().optional(),
  user: z.string().optional(),
  metadata: z.record(z.string(), z.string()).nullable().optional(),
  n: z.number().int().min(1).max(1, 'must be 1: chatgate writes one answer').nullable().optional(),
}).loose();

type Message = z.infer<typeof message>;

/** Reads a parsed JSON body into a {@link CompletionRequest}, or says what is wrong with it. */
export function toCompletionRequest(json: unknown): CompletionRequest | RequestProblem {
  const parsed = body.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.length > 0 ? issue.path.join('.') : null;
    return { message: `${param ?? 'the body'} ${issue.message.startsWith('must') ? issue.message : `is invalid (${issue.message})`}`, param };
  }
  const { messages, stream, stream_options: streamOptions, user, metadata } = parsed.data;
  const input = newInput(messages);
  if ('message' in input) return input;
  const session = metadata?.session ?? user;
  return {
    model: parsed.data.model ?? 'chatgate',
    stream: stream === true,
    includeUsage: stream === true && streamOptions?.include_usage === true,
    text: input.text,
    ...(session !== undefined ? { session } : {}),
  };
}

/**
 * The new input of `messages`: the `user` messages after the last `assistant` (or `tool`) message,
 * all of them when there is none; `system` and `developer` messages are ignored (chatgate has its
 * own system prompt). Earlier messages are already in the session.
 */
export function newInput(messages: readonly Message[]): { text: string } | RequestProblem {
  let start = 0;
  for (let k = messages.length - 1; k >= 0; k--) {
    if (messages[k]!.role === 'assistant' || messages[k]!.role === 'tool') {
      start = k + 1;
      break;
    }
  }
  const texts: string[] = [];
  for (let k = start; k < messages.length; k++) {
    const item = messages[k]!;
    if (item.role === 'system' || item.role === 'developer') continue;
    if (item.role !== 'user') return { message: `messages.${k}.role must be one of user, assistant, system, developer, tool (got ${item.role.slice(0, 40)})`, param: `messages.${k}.role` };
    const text = textOf(item, k);
    if (typeof text !== 'string') return text;
    if (text.trim() !== '') texts.push(text);
  }
  if (texts.length === 0) return { message: 'messages must end with a user message that has text (after the last assistant message)', param: 'messages' };
  return { text: texts.join('\n\n') };
}

/** The session name of a request: the header, else the body's, else {@link DEFAULT_SESSION}; null when it breaks {@link SESSION_RE}. */
export function sessionNameOf(header: string | undefined, request: Pick<CompletionRequest, 'session'>): string | null {
  const name = header?.trim() || request.session || DEFAULT_SESSION;
  return SESSION_RE.test(name) ? name : null;
}

function textOf(item: Message, index: number): string | RequestProblem {
  if (typeof item.content === 'string') return item.content;
  if (!item.content) return '';
  const texts: string[] = [];
  for (const [k, part] of item.content.entries()) {
    const text = textPart.safeParse(part);
    if (!text.success) return { message: `messages.${index}.content.${k}: only text parts are taken (got ${String(part.type).slice(0, 40)})`, param: `messages.${index}.content` };
    texts.push(text.data.text);
  }
  return texts.join('\n');
}
