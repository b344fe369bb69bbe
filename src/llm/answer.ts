/** The model's answer in our shape, whether it came as one body or assembled from a stream. */
import type { OpenAI } from 'openai';
import type { AssistantMessage, ToolCall } from '../core/messages.js';
import { toWellFormedText } from '../core/text.js';
import type { CallUsage } from '../core/models.js';

/** One answered call as {@link CompletionResult}: the message made well-formed, the usage converted (null when not reported). */
export function toCompletionResult(message: OpenAI.Chat.Completions.ChatCompletionMessage, usage: OpenAI.Completions.CompletionUsage | undefined | null, finishReason: string | null, model: string): CompletionResult {
  return { message: toAssistant(message), usage: toUsage(usage ?? undefined), finishReason, model };
}

/** The model's answer in our shape, made well-formed: half an emoji would make Redis refuse the commit. */
function toAssistant(message: OpenAI.Chat.Completions.ChatCompletionMessage): AssistantMessage {
  const calls: ToolCall[] = [];
  for (const call of message.tool_calls ?? []) {
    if (call.type === 'function') calls.push({ id: call.id, type: 'function', function: { name: call.function.name, arguments: toWellFormedText(call.function.arguments ?? '') } });
  }
  const out: AssistantMessage = { role: 'assistant', content: message.content == null ? null : toWellFormedText(message.content) };
  if (calls.length > 0) out.tool_calls = calls;
  return out;
}

function toUsage(usage: OpenAI.Completions.CompletionUsage | undefined): CallUsage | null {
  if (!usage) return null;
  return {
    promptTokens: usage.prompt_tokens ?? 0,
    completionTokens: usage.completion_tokens ?? 0,
    cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

/** The answer of one call. `usage` is null when the provider did not report it. */
export interface CompletionResult {
  message: AssistantMessage;
  usage: CallUsage | null;
  finishReason: string | null;
  model: string;
}
