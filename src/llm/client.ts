import { setTimeout as sleep } from 'node:timers/promises';
import { OpenAI } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { CallScope } from '../core/budget.js';
import type { ChatMessage } from '../core/messages.js';
import { LlmError } from '../errors.js';
import type { Logger } from '../log.js';
import { createSilentLogger, lazyChild } from '../log.js';
import { DEFAULT_MODEL_TIMEOUT_MS, DEFAULT_RETRY_POLICY, decideRetry, type RetryPolicy } from '../core/retry.js';
import { toCompletionResult, type CompletionResult } from './answer.js';
import { toFailureClass, toLlmError } from './errors.js';
import { createHttpFetch } from './http-fetch.js';
import { streamCompletion } from './stream.js';

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
  /**
   * The request's size in tokens as the caller already knows it (the session's `requestTokens`):
   * the budget wrapper reserves by it instead of tokenizing the messages again. Not sent.
   */
  promptTokens?: number;
  /** Whom the call counts for in the budgets (src/budget/guard.ts). None: the deployment alone. Not sent. */
  scope?: CallScope;
  /** Logger of the unit of work (a turn binds sessionId, channel, jobId); default the client's. */
  logger?: Logger;
  /**
   * Aborts the call (and any retry wait): the client throws an `LlmError` of kind `aborted` at once
   * and never retries it (`/stop`).
   */
  signal?: AbortSignal;
  /**
   * Appended assistant text as it arrives (streamed calls only; well-formed). Only the text of the
   * attempt that succeeds makes the answer: see {@link CompletionRequest.onRestart}.
   */
  onDelta?: (text: string) => void;
  /**
   * Called when an attempt that already passed text to `onDelta` failed and the call is tried
   * again: the text so far is void, the next deltas start the answer afresh.
   */
  onRestart?: () => void;
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
  /**
   * Stream answers (`stream: true` with `stream_options.include_usage`). Default true. An endpoint
   * that refuses streaming by name (400/422 naming `stream`/`stream_options`) or answers a streamed
   * request with a plain JSON body is asked without streaming from then on (per client).
   */
  stream?: boolean;
}

// Defined beside the retry policy so the configuration reads it without loading the openai SDK.
export { DEFAULT_MODEL_TIMEOUT_MS };

/** The request fields that carry an output limit. */
export type MaxTokensField = 'max_tokens' | 'max_completion_tokens';

/** Calls the chat-completions endpoint, retrying transient failures; throws {@link LlmError}. */
export interface LlmClient {
  readonly model: string;
  /** Timeout of one attempt in ms, when the client has one (named in the user's notice when a call times out). */
  readonly timeoutMs?: number;
  complete(request: CompletionRequest): Promise<CompletionResult>;
}

/** Creates the openai-SDK client over `node:http` (./http-fetch.ts). The SDK's own retries are off: ours honour the policy. */
export function createLlmClient(options: LlmClientOptions, deps: { logger?: Logger; random?: () => number } = {}): LlmClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS;
  // The socket's idle bound ends a plain body that stalls; a second later than the SDK's and the stream's own timers, which name the timeout.
  const httpFetch = createHttpFetch({ idleTimeoutMs: timeoutMs + 1000 });
  const sdk = new OpenAI({ baseURL: options.baseURL, apiKey: options.apiKey ?? 'none', timeout: timeoutMs, maxRetries: 0, logLevel: 'off', fetch: httpFetch });
  const errorContext = { secrets: options.apiKey ? [options.apiKey] : [], timeoutMs };
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const random = deps.random ?? Math.random;
  const log = (deps.logger ?? createSilentLogger()).child({ component: 'llm' });
  let limitField: MaxTokensField = options.maxTokensField ?? 'max_tokens';
  let streaming = options.stream ?? true;
  const once = async (request: CompletionRequest, field: MaxTokensField, callLog: () => Logger): Promise<CompletionResult> => {
    const model = request.model ?? options.model;
    if (!streaming) return completeOnce(sdk, request, model, field);
    const outcome = await streamCompletion(sdk, requestBody(request, model, field), { model, signal: request.signal, idleTimeoutMs: timeoutMs, onDelta: request.onDelta });
    if (outcome.kind === 'plain') {
      streaming = false;
      callLog().warn({ model }, 'endpoint answered a streamed request with a plain body: asking it without streaming from now on');
    }
    return outcome.result;
  };
  return {
    model: options.model,
    timeoutMs,
    async complete(request) {
      const model = request.model ?? options.model;
      // Derived only when a line is written: a child logger per call cost more than the rest of the call's bookkeeping.
      const callLog = request.logger ? lazyChild(request.logger, { component: 'llm' }) : () => log;
      let field = limitField;
      let switched = false;
      let shown = false;
      const counted = request.onDelta ? { ...request, onDelta: (text: string) => { shown = true; request.onDelta!(text); } } : request;
      for (let attempt = 0; ; attempt++) {
        let error: LlmError;
        try {
          const result = await once(counted, field, callLog);
          limitField = field;
          return result;
        } catch (err) {
          error = toLlmError(err, `chat completion with ${model}`, errorContext);
        }
        if (shown) {
          shown = false;
          request.onRestart?.();
        }
        if (streaming && rejectsStreaming(error)) {
          streaming = false;
          callLog().warn({ model, status: error.status }, 'endpoint refused streaming, asking again without it (and from now on)');
          attempt--;
          continue;
        }
        if (!switched && request.maxTokens && rejectsField(error, field)) {
          switched = true;
          const rejected = field;
          field = field === 'max_tokens' ? 'max_completion_tokens' : 'max_tokens';
          callLog().warn({ model, rejected, using: field }, 'endpoint rejected the output limit field, asking again with the other');
          attempt--;
          continue;
        }
        if (request.signal?.aborted) throw error.kind === 'aborted' ? error : abortedError(model, error);
        const decision = decideRetry(toFailureClass(error), attempt, policy, random());
        if (!decision.retry) throw error;
        callLog().warn({ model, attempt, delayMs: decision.delayMs, status: error.status, kind: error.kind }, 'llm call failed, retrying');
        await sleep(decision.delayMs, undefined, request.signal ? { signal: request.signal } : undefined).catch(() => {
          throw abortedError(model, error);
        });
      }
    },
  };
}

/** One attempt of a chat completion. A 200 without an answer is thrown as transient: asked again. */
async function completeOnce(sdk: OpenAI, request: CompletionRequest, model: string, field: MaxTokensField): Promise<CompletionResult> {
  const body: ChatCompletionCreateParamsNonStreaming = requestBody(request, model, field);
  const response = await sdk.chat.completions.create(body, request.signal ? { signal: request.signal } : undefined);
  const choice = Array.isArray(response?.choices) ? response.choices[0] : undefined;
  // A proxy or an overloaded server may answer 200 without an answer: worth asking again.
  if (!choice?.message) throw new LlmError(`chat completion with ${model} returned no choices`, { kind: 'transient' });
  return toCompletionResult(choice.message, response.usage, choice.finish_reason ?? null, model);
}

/** The request body both call shapes share. */
function requestBody(request: CompletionRequest, model: string, field: MaxTokensField): ChatCompletionCreateParamsNonStreaming {
  const body: ChatCompletionCreateParamsNonStreaming = { model, messages: request.messages as ChatCompletionMessageParam[] };
  if (request.tools && request.tools.length > 0) body.tools = request.tools;
  if (request.maxTokens && request.maxTokens > 0) body[field] = request.maxTokens;
  return body;
}

/** True when the endpoint refused the request because of streaming itself (it names `stream` or `stream_options`). */
function rejectsStreaming(error: LlmError): boolean {
  return (error.status === 400 || error.status === 422) && error.kind === 'permanent' && /\bstream(_options)?\b/i.test(error.message);
}

function abortedError(model: string, cause: unknown): LlmError {
  return new LlmError(`chat completion with ${model} aborted`, { kind: 'aborted', cause });
}

/** True when the endpoint refused the request because of the output-limit field itself (by name). */
function rejectsField(error: LlmError, field: MaxTokensField): boolean {
  return (error.status === 400 || error.status === 422) && error.message.includes(field) && /unsupported|not supported|unknown|unrecogni[sz]ed|not allowed|not permitted|extra/i.test(error.message);
}
