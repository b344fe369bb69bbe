import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { isRetryableStatus, parseRetryAfterMs, type FailureClass } from '../core/retry.js';
import { LlmError } from '../errors.js';

const CONTEXT_LENGTH = /context[_ ]length|maximum context|context window|too many tokens|prompt is too long|reduce the length/i;

/**
 * The retry policy's view of an {@link LlmError}: transient and connection failures are
 * retryable (with the provider's retry-after), the others are not.
 */
export function toFailureClass(error: LlmError): FailureClass {
  if (error.kind === 'connection') return { kind: 'transient' };
  if (error.kind !== 'transient') return { kind: 'permanent' };
  return error.retryAfterMs === undefined ? { kind: 'transient' } : { kind: 'transient', retryAfterMs: error.retryAfterMs };
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
  if (isRetryableStatus(status)) {
    const retryAfterMs = parseRetryAfterMs(err.headers, Date.now());
    const suffix = retryAfterMs === undefined ? '' : `, retry after ${Math.ceil(retryAfterMs / 1000)} s`;
    return new LlmError(`${detail}${suffix}`, { kind: 'transient', status, retryAfterMs, cause: err });
  }
  return new LlmError(detail, { kind: 'permanent', status, cause: err });
}
