/**
 * The one retry policy of remote calls (LLM endpoint, chat platforms): a pure classifier, one
 * backoff function and one decision. Network errors, 408, 409, 429 and 5xx are retried, a
 * retry-after is honoured; a rejected formatting is resent as plain text; everything else is
 * permanent. Callers map it onto their layer: the LLM client sleeps and calls again
 * ({@link decideRetry}); the outbound consumer puts a failed reply in its shard's delayed set for
 * the backoff (src/outbound/handle-entry.ts). Nothing below them retries (the SDKs' own retries are off).
 */

/** What the caller should do about a failed remote call. */
export type FailureKind = 'rate_limited' | 'transient' | 'format_rejected' | 'permanent';

/** The facts of a failed remote call, as far as they are known. */
export interface RemoteFailure {
  /** HTTP status (or Telegram `error_code`), when there was a response. */
  status?: number;
  /** The remote's error text (Telegram `description`, Discord `message`). */
  description?: string;
  /** How long the remote asked us to wait (retry-after), in ms. */
  retryAfterMs?: number;
  /** True when no response arrived (connection refused, reset, timeout). */
  network?: boolean;
}

/** The classification of a {@link RemoteFailure}. */
export interface FailureClass {
  kind: FailureKind;
  /** How long to wait before retrying, in ms (rate limits: the remote's retry-after or a default). */
  retryAfterMs?: number;
}

/** How often and how long to retry. */
export interface RetryPolicy {
  /** Retries after the first attempt. Default 4. */
  maxRetries: number;
  /** Delay of the first retry in ms, doubled per retry. Default 500. */
  baseDelayMs: number;
  /** Ceiling of one backoff delay in ms. Default 30 000. */
  maxDelayMs: number;
  /** Fraction of the delay randomised (±), in [0, 1]. Default 0.2. */
  jitterRatio: number;
}

/** What to do after a failed attempt. */
export type RetryDecision = { retry: true; delayMs: number } | { retry: false };

/** Defaults of {@link RetryPolicy}. */
/** Default timeout of one model call attempt in ms (`CHATGATE_MODEL_TIMEOUT_MS`). */
export const DEFAULT_MODEL_TIMEOUT_MS = 120_000;

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({ maxRetries: 4, baseDelayMs: 500, maxDelayMs: 30_000, jitterRatio: 0.2 });

/** Wait when a 429 carries no retry-after, in ms. */
export const DEFAULT_RETRY_AFTER_MS = 1_000;

const FORMAT_REJECTED_RE = /can't parse entities|can't find end of|unsupported start tag|unexpected end tag|can't parse/i;

/** Whether a response with HTTP `status` may succeed when tried again: 408, 409, 429 and 5xx. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Classifies a failed remote call. A failure without a status (no response) counts as transient. */
export function classifyFailure(failure: RemoteFailure): FailureClass {
  const { status, description = '' } = failure;
  if (failure.network || status === undefined) return { kind: 'transient' };
  if (status === 429) return { kind: 'rate_limited', retryAfterMs: validMs(failure.retryAfterMs) ?? DEFAULT_RETRY_AFTER_MS };
  if (status === 400 && FORMAT_REJECTED_RE.test(description)) return { kind: 'format_rejected' };
  if (isRetryableStatus(status)) {
    const retryAfterMs = validMs(failure.retryAfterMs);
    return retryAfterMs === undefined ? { kind: 'transient' } : { kind: 'transient', retryAfterMs };
  }
  return { kind: 'permanent' };
}

/** Whether a failure of `kind` is worth trying again later (rate limits and transient ones). */
export function isRetryableKind(kind: FailureKind): boolean {
  return kind === 'rate_limited' || kind === 'transient';
}

/**
 * Exponential backoff before retry number `retry` (1 = the first retry): `baseDelayMs ×
 * 2^(retry−1)`, capped at `maxDelayMs`, ±`jitterRatio` taken from `random` (a number in [0, 1);
 * default 0.5 = no jitter).
 */
export function backoffDelayMs(retry: number, policy: Partial<RetryPolicy> = {}, random = 0.5): number {
  const { baseDelayMs, maxDelayMs, jitterRatio } = { ...DEFAULT_RETRY_POLICY, ...policy };
  const exponential = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, retry - 1));
  const jitter = exponential * jitterRatio * (random * 2 - 1);
  return Math.max(0, Math.min(maxDelayMs, Math.round(exponential + jitter)));
}

/**
 * Decides whether to retry after `retriesDone` retries (0 after the first failure): retryable
 * kinds are, until `maxRetries`; the wait is the remote's retry-after when it gave one, else the
 * backoff — either capped at `maxDelayMs`.
 */
export function decideRetry(failure: FailureClass, retriesDone: number, policy: Partial<RetryPolicy> = {}, random = 0.5): RetryDecision {
  const resolved = { ...DEFAULT_RETRY_POLICY, ...policy };
  if (!isRetryableKind(failure.kind) || retriesDone >= resolved.maxRetries) return { retry: false };
  const delayMs = failure.retryAfterMs ?? backoffDelayMs(retriesDone + 1, resolved, random);
  return { retry: true, delayMs: Math.min(resolved.maxDelayMs, delayMs) };
}

/**
 * Parses `retry-after-ms`, else `retry-after` (seconds or an HTTP date, relative to `nowMs`)
 * into ms. @returns undefined when neither header holds a usable value.
 */
export function parseRetryAfterMs(headers: { get(name: string): string | null } | undefined, nowMs: number): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && validMs(Number(ms)) !== undefined) return Number(ms);
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** A platform's `retry_after` in seconds as ms (rounded up), or undefined when absent or invalid. */
export function secondsToMs(seconds: number | undefined): number | undefined {
  return seconds === undefined ? undefined : validMs(Math.ceil(seconds * 1000));
}

function validMs(ms: number | undefined): number | undefined {
  return ms !== undefined && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}
