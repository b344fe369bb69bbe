/** One function call requested by the assistant (chat-completions shape). */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A part of a multi-part user message (chat-completions shape). */
export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: 'auto' | 'low' | 'high' } };

/** A message in the OpenAI chat-completions shape; the projection is a list of these. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | ContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** The assistant variant of {@link ChatMessage}. */
export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;
/** The tool-result variant of {@link ChatMessage}. */
export type ToolMessage = Extract<ChatMessage, { role: 'tool' }>;

/** Marker that starts every text chatgate itself writes into a projection (notes, summaries). */
export const CHATGATE_MARK = '[chatgate:';

/** The plain text of a message: string content, or its text parts joined. Never null. */
export function messageText(message: ChatMessage): string {
  const content = message.content;
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

/** True when the message is an assistant message that requests tool calls. */
export function hasToolCalls(message: ChatMessage): message is AssistantMessage & { tool_calls: ToolCall[] } {
  return message.role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
}

/**
 * `message` with an id of its own for every tool call: an empty id, or one an earlier call of the
 * message or a call in `taken` (the projection's) already has, is replaced by `newId()`. Some
 * OpenAI-compatible endpoints send empty or repeated ids, and a call's id keys its result, its
 * approval and its idempotency key. @returns `message` itself when every id was its own.
 */
export function withOwnCallIds(message: AssistantMessage, taken: ReadonlySet<string>, newId: () => string): AssistantMessage {
  const seen = new Set<string>();
  let replaced = false;
  const calls = (message.tool_calls ?? []).map((call) => {
    let id = call.id;
    if (typeof id !== 'string' || id === '' || seen.has(id) || taken.has(id)) {
      do id = newId(); while (seen.has(id) || taken.has(id));
      replaced = true;
    }
    seen.add(id);
    return id === call.id ? call : { ...call, id };
  });
  return replaced ? { ...message, tool_calls: calls } : message;
}

/** The chat-completions rule for a tool name. */
const TOOL_NAME_RULE = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * `message` as a provider takes it back in a later request: a tool call's name outside the
 * chat-completions rule gets `_` for each other character (OpenAI refuses the whole request
 * otherwise), and arguments that are not a JSON object text (a cut-off answer's, say) become `{}`
 * (strict endpoints and relays refuse them). For the history only: the calls run, and fail, as the
 * model sent them. @returns `message` itself when every call was fine.
 */
export function toReplayable(message: AssistantMessage): AssistantMessage {
  let changed = false;
  const calls = (message.tool_calls ?? []).map((call) => {
    const name = TOOL_NAME_RULE.test(call.function.name) ? call.function.name : call.function.name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64) || 'unnamed_tool';
    const args = isJsonObjectText(call.function.arguments) ? call.function.arguments : '{}';
    if (name === call.function.name && args === call.function.arguments) return call;
    changed = true;
    return { ...call, function: { name, arguments: args } };
  });
  return changed ? { ...message, tool_calls: calls } : message;
}

/** The ids of the tool calls the assistant messages of `messages` made. */
export function toolCallIds(messages: readonly ChatMessage[]): Set<string> {
  return new Set(messages.flatMap((message) => (message.role === 'assistant' ? (message.tool_calls ?? []).map((call) => call.id) : [])));
}

/** True when chatgate wrote this text (a prune note, trimmed result, summary): never mined for facts. */
export function isChatgateText(text: string): boolean {
  return text.startsWith(CHATGATE_MARK);
}

/** Opens each text part of the user message a tool round adds to show the model its images (workers/tool-images.ts). */
export const TOOL_IMAGES_MARK = `${CHATGATE_MARK}tool images]`;

/**
 * True when `message` is the one a tool round added after its tool results to show the model their
 * images: a user message right after a tool result (`previousRole`, the role of the message before
 * it), its first part opening with {@link TOOL_IMAGES_MARK}. It belongs to the round; nobody said it.
 */
export function isToolImagesMessage(message: ChatMessage | undefined, previousRole: string | undefined): boolean {
  if (message?.role !== 'user' || typeof message.content === 'string' || previousRole !== 'tool') return false;
  const first = message.content[0];
  return first?.type === 'text' && first.text.startsWith(TOOL_IMAGES_MARK);
}

/** Index of the latest message a user sent (a tool round's images message is not one), or -1. */
export function lastUserIndex(messages: readonly ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'user' && !isToolImagesMessage(messages[i], messages[i - 1]?.role)) return i;
  return -1;
}

/**
 * Moves `index` back so that it does not point inside a tool-call group: a group is an assistant
 * message with tool calls followed by its tool results (and the round's images message, if any).
 * Returns the start of the group `index` is in.
 */
export function alignToGroupStart(messages: readonly ChatMessage[], index: number): number {
  let i = index;
  if (i > 0 && i < messages.length && isToolImagesMessage(messages[i], messages[i - 1]!.role)) i--;
  while (i > 0 && i < messages.length && messages[i]!.role === 'tool') i--;
  return i;
}

/** End (exclusive) of the group that starts at `start`: the message plus any tool results after it, and the round's images message. */
export function groupEnd(messages: readonly ChatMessage[], start: number): number {
  let end = start + 1;
  if (!hasToolCalls(messages[start]!)) return end;
  while (end < messages.length && messages[end]!.role === 'tool') end++;
  if (isToolImagesMessage(messages[end], messages[end - 1]!.role)) end++;
  return end;
}

function isJsonObjectText(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  } catch {
    return false;
  }
}
