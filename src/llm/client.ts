import { toWellFormedText } from '../core/text.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { OpenAI } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { AssistantMessage, ChatMessage, ToolCall } from '../core/messages.js';
import { LlmError } from '../errors.js';
import type { Logger } from '../log.js';
import { createSilentLogger } from '../log.js';
import type { CallUsage } from '../redis/usage.js';
import { DEFAULT_RETRY_POLICY, decideRetry, type RetryPolicy } from '../core/retry.js';
import { toFailureClass, toLlmError } from './errors.js';

/** A function tool as sent to the model (chat-completions shape). */
export interface ToolSchema {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** One chat-completions request. */
export interface CompletionRequest {
  messages: ChatMessage[];
  tools?: ToolSchema[];
  /** Default: the client's model. */
  model?: string;
  /** Output limit of the answer in tokens (the output reserve); omitted when unset or 0. */
  maxTokens?: number;
  /** Logger of the unit of work (a turn binds sessionId, channel, jobId); default the client's. */
  logger?: Logger;
  /**
   * Aborts the call (and any retry wait): the client throws an `LlmError` of kind `aborted` at once
   * and never retries it (`/stop`).
   */
  signal?: AbortSignal;
}

/** The answer of one call. `usage` is null when the provider did not report it. */
export interface CompletionResult {
  message: AssistantMessage;
  usage: CallUsage | null;
  finishReason: string | null;
  model: string;
}

/** Options of {@link createLlmClient}. */
export interface LlmClientOptions {
  /** OpenAI-compatible base URL, e.g. `https://api.openai.com/v1`. */
  baseURL?: string;
  apiKey?: string;
  /** Default model. */
  model: string;
  /** Timeout of one HTTP attempt in ms (a timed-out attempt is retried like a connection failure). Default {@link DEFAULT_MODEL_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Retries of 408/409/429/5xx, timeouts and connection failures (src/core/retry.ts). Default {@link DEFAULT_RETRY_POLICY}. */
  retry?: Partial<RetryPolicy>;
  /**
   * Request field of the output limit. Default `max_tokens`, which every OpenAI-compatible server
   * accepts; an endpoint that rejects it by name (OpenAI's reasoning models) is asked again once
   * with the other field, which the client then keeps using.
   */
  maxTokensField?: MaxTokensField;
}

/** Default timeout of one model call attempt in ms. */
export const DEFAULT_MODEL_TIMEOUT_MS = 120_000;

/** The request fields that carry an output limit. */
export type MaxTokensField = 'max_tokens' | 'max_completion_tokens';

/** Calls the chat-completions endpoint, retrying transient failures; throws {@link LlmError}. */
export interface LlmClient {
  readonly model: string;
  /** Timeout of one attempt in ms, when the client has one (named in the user's notice when a call times out). */
  readonly timeoutMs?: number;
  complete(request: CompletionRequest): Promise<CompletionResult>;
}

/** Creates the openai-SDK client. The SDK's own retries are off: ours honour the policy. */
export function createLlmClient(options: LlmClientOptions, deps: { logger?: Logger; random?: () => number } = {}): LlmClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS;
  const sdk = new OpenAI({ baseURL: options.baseURL, apiKey: options.apiKey ?? 'none', timeout: timeoutMs, maxRetries: 0 });
  const errorContext = { secrets: options.apiKey ? [options.apiKey] : [], timeoutMs };
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const random = deps.random ?? Math.random;
  const log = (deps.logger ?? createSilentLogger()).child({ component: 'llm' });
  let limitField: MaxTokensField = options.maxTokensField ?? 'max_tokens';
  const once = (request: CompletionRequest, field: MaxTokensField) => completeOnce(sdk, request, request.model ?? options.model, field);
  return {
    model: options.model,
    timeoutMs,
    async complete(request) {
      const model = request.model ?? options.model;
      const callLog = request.logger ? request.logger.child({ component: 'llm' }) : log;
      let field = limitField;
      let switched = false;
      for (let attempt = 0; ; attempt++) {
        let error: LlmError;
        try {
          const result = await once(request, field);
          limitField = field;
          return result;
        } catch (err) {
          error = toLlmError(err, `chat completion with ${model}`, errorContext);
        }
        if (!switched && request.maxTokens && rejectsField(error, field)) {
          switched = true;
          const rejected = field;
          field = field === 'max_tokens' ? 'max_completion_tokens' : 'max_tokens';
          callLog.warn({ model, rejected, using: field }, 'endpoint rejected the output limit field, asking again with the other');
          attempt--;
          continue;
        }
        if (request.signal?.aborted) throw error.kind === 'aborted' ? error : abortedError(model, error);
        const decision = decideRetry(toFailureClass(error), attempt, policy, random());
        if (!decision.retry) throw error;
        callLog.warn({ model, attempt, delayMs: decision.delayMs, status: error.status, kind: error.kind }, 'llm call failed, retrying');
        await sleep(decision.delayMs, undefined, request.signal ? { signal: request.signal } : undefined).catch(() => {
          throw abortedError(model, error);
        });
      }
    },
  };
}

/** One attempt of a chat completion. A 200 without an answer is thrown as transient: asked again. */
async function completeOnce(sdk: OpenAI, request: CompletionRequest, model: string, field: MaxTokensField): Promise<CompletionResult> {
  const body: ChatCompletionCreateParamsNonStreaming = { model, messages: request.messages as ChatCompletionMessageParam[] };
  if (request.tools && request.tools.length > 0) body.tools = request.tools;
  if (request.maxTokens && request.maxTokens > 0) body[field] = request.maxTokens;
  const response = await sdk.chat.completions.create(body, request.signal ? { signal: request.signal } : undefined);
  const choice = Array.isArray(response?.choices) ? response.choices[0] : undefined;
  // A proxy or an overloaded server may answer 200 without an answer: worth asking again.
  if (!choice?.message) throw new LlmError(`chat completion with ${model} returned no choices`, { kind: 'transient' });
  return { message: toAssistant(choice.message), usage: toUsage(response.usage), finishReason: choice.finish_reason ?? null, model };
}

function abortedError(model: string, cause: unknown): LlmError {
  return new LlmError(`chat completion with ${model} aborted`, { kind: 'aborted', cause });
}

/** True when the endpoint refused the request because of the output-limit field itself (by name). */
function rejectsField(error: LlmError, field: MaxTokensField): boolean {
  return (error.status === 400 || error.status === 422) && error.message.includes(field) && /unsupported|not supported|unknown|unrecogni[sz]ed|not allowed|not permitted|extra/i.test(error.message);
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
