/**
 * The OpenAI wire shapes the API answers with: a completion, a stream chunk, the model list and an
 * error (`{ error: { message, type, param, code } }`), as the official SDKs read them.
 */
import type { InboundVerdict } from '../../src/core/inbound.js';

/** Token figures of one answer, as OpenAI reports them. */
export interface ApiUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** An error answer: its HTTP status and body. */
export interface ApiError {
  status: 400 | 401 | 403 | 404 | 409 | 429 | 500 | 503 | 504;
  body: { error: { message: string; type: string; param: string | null; code: string | null } };
  /** For 429: seconds until the sender may send again (`Retry-After`). */
  retryAfterSeconds?: number;
  /**
   * `x-should-retry: false`, which the OpenAI SDKs obey: sending it again cannot help now, or would
   * add the message twice (the SDKs retry 409, 429 and 5xx by default).
   */
  noRetry?: boolean;
}

/** The model id `/v1/models` lists (any `model` is accepted in a request, and echoed). */
export const API_MODEL_ID = 'chatgate';

/** Builds an {@link ApiError}. */
export function apiError(status: ApiError['status'], message: string, type: string, code: string | null, param: string | null = null): ApiError {
  return { status, body: { error: { message, type, param, code } } };
}

/** The error a refusal of the gateway answers with; null for a verdict that is no refusal. */
export function refusalError(verdict: InboundVerdict): ApiError | null {
  const reason = verdict.reason ?? 'refused';
  switch (verdict.outcome) {
    case 'denied': return apiError(403, reason, 'permission_error', 'user_not_allowed');
    case 'rate_limited': return { ...apiError(429, reason, 'rate_limit_error', 'rate_limit_exceeded'), retryAfterSeconds: Math.max(1, Math.ceil((verdict.retryAfterMs ?? 1000) / 1000)) };
    case 'over_budget': return overBudgetError(reason);
    case 'too_long': return apiError(400, reason, 'invalid_request_error', 'message_too_long', 'messages');
    case 'too_large':
    case 'unsupported': return apiError(400, reason, 'invalid_request_error', 'unsupported_content', 'messages');
    case 'duplicate': return { ...apiError(409, 'this request was already taken (same Idempotency-Key); its answer is in the session', 'invalid_request_error', 'duplicate_request'), noRetry: true };
    default: return null;
  }
}

/**
 * The 429 of a spend limit that holds, `message` saying which and when it resets: the same for the
 * gateway's early answer and for a turn the worker refused (the first request over the limit).
 */
export function overBudgetError(message: string): ApiError {
  return { ...apiError(429, message, 'insufficient_quota', 'insufficient_quota'), noRetry: true };
}

/** A whole completion (non-streaming). */
export function completionBody(id: string, model: string, createdSeconds: number, text: string, usage: ApiUsage) {
  return {
    id, object: 'chat.completion', created: createdSeconds, model,
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage,
  };
}

/** One `chat.completion.chunk`: a delta, the finish, or (with `usage`, no choices) the usage chunk. */
export function chunkBody(id: string, model: string, createdSeconds: number, part: { delta?: { role?: 'assistant'; content?: string }; finish?: boolean; usage?: ApiUsage }) {
  const choices = part.usage ? [] : [{ index: 0, delta: part.delta ?? {}, logprobs: null, finish_reason: part.finish ? 'stop' : null }];
  return { id, object: 'chat.completion.chunk', created: createdSeconds, model, choices, ...(part.usage ? { usage: part.usage } : {}) };
}

/** `GET /v1/models`. */
export function modelsBody() {
  return { object: 'list', data: [{ id: API_MODEL_ID, object: 'model', created: 0, owned_by: 'chatgate' }] };
}

/** Usage as OpenAI reports it, from prompt and completion tokens. */
export function toApiUsage(promptTokens: number, completionTokens: number): ApiUsage {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}
