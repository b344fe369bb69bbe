/**
 * Retry policy for channel (platform) calls: one pure classifier and one backoff function.
 * Network errors, 408, 409, 429 and 5xx are retried (429 honouring `retry_after`); a rejected
 * formatting is resent as plain text; everything else is permanent.
 */

/** What the caller should do about a failed platform call. */
export type ChannelFailureKind = 'rate_limited' | 'transient' | 'format_rejected' | 'permanent';

/** The facts of a failed platform call, as far as they are known. */
export interface ChannelFailure {
  /** HTTP status (or Telegram `error_code`), when there was a response. */
  status?: number;
  /** The platform's error text (Telegram `description`, Discord `message`). */
  description?: string;
  /** The platform's `retry_after`, in seconds. */
  retryAfterSeconds?: number;
  /** True when no response arrived (connection refused, reset, timeout). */
  network?: boolean;
}

/** The classification of a {@link ChannelFailure}. */
export interface ChannelFailureClass {
  kind: ChannelFailureKind;
  /** How long to wait before retrying, in ms (rate limits only). */
  retryAfterMs?: number;
}

/** Options of {@link backoffDelayMs}. */
export interface BackoffOptions {
  /** Delay of the first retry, in ms. Default 500. */
  baseMs?: number;
  /** Upper bound of any delay, in ms. Default 30 000. */
  maxMs?: number;
  /** Fraction of the delay randomised (±), in [0, 1]. Default 0.2. */
  jitterRatio?: number;
}

/** Default wait when a 429 carries no `retry_after`, in ms. */
export const DEFAULT_RETRY_AFTER_MS = 1_000;

const FORMAT_REJECTED_RE = /can't parse entities|can't find end of|unsupported start tag|unexpected end tag|can't parse/i;
const TRANSIENT_STATUSES = new Set([408, 409, 425, 429]);

/** Classifies a failed platform call. Unknown failures without a status count as transient. */
export function classifyChannelFailure(failure: ChannelFailure): ChannelFailureClass {
  const { status, description = '' } = failure;
  if (failure.network || status === undefined) return { kind: 'transient' };
  if (status === 429) {
    const seconds = failure.retryAfterSeconds;
    const retryAfterMs = seconds !== undefined && seconds >= 0 ? Math.ceil(seconds * 1000) : DEFAULT_RETRY_AFTER_MS;
    return { kind: 'rate_limited', retryAfterMs };
  }
  if (status === 400 && FORMAT_REJECTED_RE.test(description)) return { kind: 'format_rejected' };
  if (status >= 500 || TRANSIENT_STATUSES.has(status)) return { kind: 'transient' };
  return { kind: 'permanent' };
}

/**
 * Exponential backoff for retry `attempt` (1 = first retry): `baseMs × 2^(attempt−1)`, capped at
 * `maxMs`, with ±`jitterRatio` taken from `random` (a number in [0, 1), default 0.5 = no jitter).
 */
export function backoffDelayMs(attempt: number, options: BackoffOptions = {}, random = 0.5): number {
  const baseMs = options.baseMs ?? 500;
  const maxMs = options.maxMs ?? 30_000;
  const jitterRatio = options.jitterRatio ?? 0.2;
  const exponential = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  const jitter = exponential * jitterRatio * (random * 2 - 1);
  return Math.max(0, Math.min(maxMs, Math.round(exponential + jitter)));
}
