import { CHATGATE_MARK, hasToolCalls, messageText, type ChatMessage } from '../messages.js';

/** The assistant's acknowledgement of a summary, when a user message follows it. */
export const SUMMARY_ACK = `${CHATGATE_MARK}summary acknowledged] Understood. I will continue from the summary above.`;

/**
 * Removes tool results whose call is not in the list and strips tool calls that have no result.
 * An assistant message left with neither calls nor text is dropped. Returns a new array; the
 * messages that did not change are the same objects.
 */
export function sanitizeToolPairs(messages: readonly ChatMessage[]): ChatMessage[] {
  const answered = new Set<string>();
  const requested = new Set<string>();
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (!hasToolCalls(message)) continue;
    // A call counts as answered only by results that follow it before the next non-tool message.
    for (let j = i + 1; j < messages.length && messages[j]!.role === 'tool'; j++) {
      const result = messages[j]!;
      if (result.role === 'tool') answered.add(result.tool_call_id);
    }
    for (const call of message.tool_calls) requested.add(call.id);
  }
  const out: ChatMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === 'tool') {
      if (requested.has(message.tool_call_id) && answered.has(message.tool_call_id) && followsItsCall(out, message.tool_call_id)) {
        out.push(message);
      }
      continue;
    }
    if (hasToolCalls(message)) {
      const calls = message.tool_calls.filter((call) => answered.has(call.id));
      if (calls.length === message.tool_calls.length) out.push(message);
      else if (calls.length > 0) out.push({ ...message, tool_calls: calls });
      else if (messageText(message).trim() !== '') out.push({ role: 'assistant', content: message.content });
      continue;
    }
    out.push(message);
  }
  return out;
}

/**
 * Places the summary text between `head` and `tail`. With no protected head the summary is the first
 * message after the system prompt, as a `user` message (providers behind OpenAI-compatible proxies
 * reject a conversation that starts with the assistant); when the tail starts with a user message a
 * short acknowledgement keeps the alternation. With a protected head its role is the one neither
 * neighbour has; when both roles are taken it is merged into the last head message.
 */
export function placeSummary(head: readonly ChatMessage[], summaryText: string, tail: readonly ChatMessage[]): ChatMessage[] {
  const beforeIndex = lastNonSystem(head);
  const after = tail.find((m) => m.role !== 'system');
  const afterRole = after?.role === 'tool' ? 'assistant' : after?.role;
  if (beforeIndex < 0) {
    const ack: ChatMessage[] = afterRole === 'user' ? [{ role: 'assistant', content: SUMMARY_ACK }] : [];
    return [...head, { role: 'user', content: summaryText }, ...ack, ...tail];
  }
  const beforeRole = head[beforeIndex]!.role;
  let role: 'user' | 'assistant' | null = null;
  if (beforeRole !== 'user' && afterRole !== 'user') role = 'user';
  else if (beforeRole !== 'assistant' && afterRole !== 'assistant') role = 'assistant';
  if (role) return [...head, { role, content: summaryText }, ...tail];
  // Both roles are taken by the neighbours: append to the last head message, never touching the tail.
  const merged = head.slice();
  merged[beforeIndex] = appendTo(head[beforeIndex]!, summaryText);
  return [...merged, ...tail];
}

/** True for the acknowledgement {@link placeSummary} puts after a summary that a user message follows. */
export function isSummaryAck(message: ChatMessage): boolean {
  return message.role === 'assistant' && message.content === SUMMARY_ACK;
}

function appendTo(message: ChatMessage, summaryText: string): ChatMessage {
  if (message.role === 'user') {
    if (typeof message.content === 'string') return { ...message, content: `${message.content}\n\n${summaryText}` };
    return { ...message, content: [...message.content, { type: 'text', text: summaryText }] };
  }
  if (message.role === 'assistant') {
    const text = messageText(message);
    return { ...message, content: text ? `${text}\n\n${summaryText}` : summaryText };
  }
  return message;
}

function lastNonSystem(messages: readonly ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role !== 'system') return i;
  return -1;
}

function followsItsCall(out: readonly ChatMessage[], callId: string): boolean {
  for (let i = out.length - 1; i >= 0; i--) {
    const message = out[i]!;
    if (message.role === 'tool') continue;
    return hasToolCalls(message) && message.tool_calls.some((call) => call.id === callId);
  }
  return false;
}

/**
 * The conversational rhythm of a history: user/assistant turns in order, where an assistant turn
 * spans its tool calls, their results and the assistant messages that follow them.
 */
export function turnRoles(messages: readonly ChatMessage[]): Array<'user' | 'assistant'> {
  const roles: Array<'user' | 'assistant'> = [];
  for (const message of messages) {
    if (message.role === 'system') continue;
    const role = message.role === 'tool' ? 'assistant' : message.role;
    if (roles[roles.length - 1] === role && role === 'assistant') continue;
    roles.push(role);
  }
  return roles;
}

/** True when no two user turns are adjacent (assistant runs with tools count as one turn). */
export function alternates(messages: readonly ChatMessage[]): boolean {
  const roles = turnRoles(messages);
  for (let i = 1; i < roles.length; i++) if (roles[i] === roles[i - 1]) return false;
  return true;
}
