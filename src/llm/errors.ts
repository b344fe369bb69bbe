import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { isRetryableStatus, parseRetryAfterMs, type FailureClass } from '../core/retry.js';
import { LlmError } from '../errors.js';

const SECRET_SHAPES: readonly RegExp[] = [/\bsk-[A-Za-z0-9_-]{8,}/g, /\bBearer\s+[A-Za-z0-9._~+/=-]+/gi];
const REDACTED = '[Redacted]';

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

/** What {@link toLlmError} knows about the call besides the error. */
export interface LlmErrorContext {
  /** Texts never to repeat (the API key): replaced by `[Redacted]` wherever the provider echoed them. */
  secrets?: readonly string[];
  /** The call's timeout in ms, named in the message of a timeout. */
  timeoutMs?: number;
}

/**
 * Replaces secrets in a provider's error text by `[Redacted]`: the given ones (the API key), and
 * anything shaped like an OpenAI key (`sk-…`) or a bearer token.
 */
export function redactSecrets(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join(REDACTED);
  for (const shape of SECRET_SHAPES) out = out.replace(shape, REDACTED);
  return out;
}

/**
 * Converts anything the openai SDK throws into an {@link LlmError}, once. A malformed body (not
 * JSON) is transient, like a 5xx. The provider's text is redacted ({@link redactSecrets}) and the
 * `cause` is a redacted copy: the SDK's error carries the raw body and headers, which may echo the key.
 */
export function toLlmError(err: unknown, what: string, context: LlmErrorContext = {}): LlmError {
  if (err instanceof LlmError) return err;
  const clean = (text: string) => redactSecrets(text, context.secrets);
  const cause = redactedCause(err, clean);
  if (err instanceof APIConnectionTimeoutError) {
    const within = context.timeoutMs === undefined ? '' : ` after ${context.timeoutMs / 1000} s`;
    return new LlmError(`${what} timed out${within}`, { kind: 'connection', cause });
  }
  if (err instanceof APIUserAbortError) return new LlmError(`${what} aborted`, { kind: 'aborted', cause });
  if (err instanceof APIConnectionError) return new LlmError(`${what} failed (connection: ${clean(err.message)})`, { kind: 'connection', cause });
  if (err instanceof APIError && typeof err.status === 'number') return fromStatus(err, what, clean(err.message), cause);
  const message = clean(err instanceof Error ? err.message : String(err));
  if (err instanceof SyntaxError) return new LlmError(`${what} returned malformed JSON (${message})`, { kind: 'transient', cause });
  if (isBrokenConnection(err)) return new LlmError(`${what} failed (connection: ${message})`, { kind: 'connection', cause });
  return new LlmError(`${what} failed (${message})`, { kind: 'permanent', cause });
}

/** True when `error` is a timeout of the call (no answer within the client's timeout). */
export function isTimeout(error: LlmError): boolean {
  return error.kind === 'connection' && error.cause instanceof Error && error.cause.name === APIConnectionTimeoutError.name;
}

/** True for a body that broke off after the headers (the SDK passes those through raw): reset, stalled or cut by the peer. */
function isBrokenConnection(err: unknown): boolean {
  const codes = [err, (err as { cause?: unknown } | undefined)?.cause].map((e) => (e && typeof e === 'object' ? (e as { code?: unknown }).code : undefined));
  return codes.some((code) => code === 'ECONNRESET' || code === 'ETIMEDOUT' || code === 'EPIPE' || code === 'UND_ERR_SOCKET');
}

/** A copy of the SDK's error with its text redacted and only its status and codes kept (no body, no headers). */
function redactedCause(err: unknown, clean: (text: string) => string): Error {
  const source = err instanceof Error ? err : new Error(String(err));
  const inner = (source as { cause?: { code?: unknown } }).cause;
  const innerCode = inner && typeof inner === 'object' && typeof inner.code === 'string' ? { code: inner.code } : undefined;
  const copy = Object.assign(new Error(clean(source.message), innerCode ? { cause: innerCode } : undefined), pick(source));
  copy.name = source.constructor.name;
  copy.stack = clean(source.stack ?? '');
  return copy;
}

function pick(err: Error): { status?: number; code?: string } {
  const { status, code } = err as { status?: unknown; code?: unknown };
  return { ...(typeof status === 'number' ? { status } : {}), ...(typeof code === 'string' ? { code } : {}) };
}

function fromStatus(err: APIError, what: string, text: string, cause: Error): LlmError {
  const status = err.status as number;
  // The SDK's message starts with the status already ("404 The model …"): said once.
  const detail = `${what} failed (${status}: ${text.startsWith(`${status} `) ? text.slice(String(status).length + 1) : text})`;
  const code = String(err.code ?? '');
  if (status === 413 || code === 'context_length_exceeded' || ((status === 400 || status === 422) && CONTEXT_LENGTH.test(err.message))) {
    return new LlmError(detail, { kind: 'context_length', status, cause });
  }
  if (status === 401 || status === 403) return new LlmError(detail, { kind: 'auth', status, cause });
  if (isRetryableStatus(status)) {
    const retryAfterMs = parseRetryAfterMs(err.headers, Date.now());
    const suffix = retryAfterMs === undefined ? '' : `, retry after ${Math.ceil(retryAfterMs / 1000)} s`;
    return new LlmError(`${detail}${suffix}`, { kind: 'transient', status, retryAfterMs, cause });
  }
  return new LlmError(detail, { kind: 'permanent', status, cause });
}
