import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { LlmError } from '../errors.js';

/** Retry policy of LLM calls. */
export interface RetryPolicy {
  /** Retries after the first attempt. Default 4. */
  maxRetries: number;
  /** First backoff delay in ms, doubled per retry. Default 500. */
  baseDelayMs: number;
  /** Ceiling of one delay in ms, also of an honoured retry-after. Default 30000. */
  maxDelayMs: number;
}

/** Defaults of {@link RetryPolicy}. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 4, baseDelayMs: 500, maxDelayMs: 30_000 };

/** What to do after a failed attempt. */
export type RetryDecision = { retry: true; delayMs: number } | { retry: false };

const CONTEXT_LENGTH = /context[_ ]length|maximum context|context window|too many tokens|prompt is too long|reduce the length/i;

/**
 * Pure retry classifier: transient and connection failures are retried with exponential backoff,
 * honouring the provider's retry-after (capped at `maxDelayMs`); `attempt` counts from 0.
 */
export function classifyRetry(error: LlmError, attempt: number, policy: RetryPolicy = DEFAULT_RETRY_POLICY): RetryDecision {
  if (error.kind !== 'transient' && error.kind !== 'connection') return { retry: false };
  if (attempt >= policy.maxRetries) return { retry: false };
  const backoff = policy.baseDelayMs * 2 ** attempt;
  return { retry: true, delayMs: Math.min(policy.maxDelayMs, error.retryAfterMs ?? backoff) };
}

/** Parses `retry-after-ms` / `retry-after` (seconds or HTTP date) into ms. */
export function parseRetryAfter(headers: Headers | undefined, nowMs: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** Converts anything the openai SDK throws into an {@link LlmError} (keeping `cause`), once. */
export function toLlmError(err: unknown, what: string): LlmError {
  if (err instanceof LlmError) return err;
  if (err instanceof APIConnectionTimeoutError) return new LlmError(`${what} timed out`, { kind: 'connection', cause: err });
  if (err instanceof APIUserAbortError) return new LlmError(`${what} aborted`, { kind: 'permanent', cause: err });
  if (err instanceof APIConnectionError) return new LlmError(`${what} failed (connection: ${err.message})`, { kind: 'connection', cause: err });
  if (err instanceof APIError && typeof err.status === 'number') return fromStatus(err, what);
  const message = err instanceof Error ? err.message : String(err);
  return new LlmError(`${what} failed (${message})`, { kind: 'permanent', cause: err });
}

function fromStatus(err: APIError, what: string): LlmError {
  const status = err.status as number;
  const detail = `${what} failed (${status}: ${err.message})`;
  const code = String(err.code ?? '');
  if (status === 413 || code === 'context_length_exceeded' || ((status === 400 || status === 422) && CONTEXT_LENGTH.test(err.message))) {
    return new LlmError(detail, { kind: 'context_length', status, cause: err });
  }
  if (status === 401 || status === 403) return new LlmError(detail, { kind: 'auth', status, cause: err });
  if (status === 408 || status === 409 || status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfter(err.headers);
    const suffix = retryAfterMs === undefined ? '' : `, retry after ${Math.ceil(retryAfterMs / 1000)} s`;
    return new LlmError(`${detail}${suffix}`, { kind: 'transient', status, retryAfterMs, cause: err });
  }
  return new LlmError(detail, { kind: 'permanent', status, cause: err });
}
