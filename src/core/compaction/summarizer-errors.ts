const CONNECTION_CODES: readonly string[] = Object.freeze(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET']);
const CONNECTION_NAMES: readonly string[] = Object.freeze(['APIConnectionError', 'APIConnectionTimeoutError', 'FetchError']);

/**
 * True when a summariser error means "do not compact now": authentication (401/403) or a connection
 * failure (refused, reset, timed out, the openai SDK's connection errors). Other errors (5xx, bad
 * output) mean "fall back to the deterministic summary".
 */
export function isAbortingSummarizerError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const record = e as { status?: unknown; code?: unknown; name?: unknown; constructor?: { name?: string }; cause?: unknown };
    if (record.status === 401 || record.status === 403) return true;
    if (typeof record.code === 'string' && CONNECTION_CODES.includes(record.code)) return true;
    if (typeof record.name === 'string' && CONNECTION_NAMES.includes(record.name)) return true;
    if (record.constructor?.name && CONNECTION_NAMES.includes(record.constructor.name)) return true;
    e = record.cause;
  }
  return false;
}
