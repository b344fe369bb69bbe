/**
 * The time-outs of chatgate's HTTP servers (the gateway's, a worker's): a client that trickles its
 * headers or its body, or holds an idle connection, is cut instead of holding a socket (and, for a
 * web chat upload, one of the few upload slots) for Node's defaults of up to five minutes. Sending
 * the response is never bounded: long polls and event streams last as long as they need.
 */
import type { ServerOptions } from 'node:http';

/** Time-outs of one HTTP server, ms. */
export interface HttpTimeouts {
  /** Time to receive a request's headers, from its first byte (or the connection's start). */
  headersTimeoutMs: number;
  /** Time to receive a whole request, headers and body (an upload of the largest attachment included). */
  requestTimeoutMs: number;
  /** How long a kept-alive connection may stay idle after a response before it is closed. */
  keepAliveTimeoutMs: number;
}

/**
 * Defaults suited to a chat API: headers 10 s, a whole request 60 s (a 10 MB upload needs about
 * 1.4 Mbit/s), an idle kept-alive connection 5 s.
 */
export const DEFAULT_HTTP_TIMEOUTS: Readonly<HttpTimeouts> = Object.freeze({ headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 5_000 });

/** Longest pause between two checks of the header and request time-outs, ms (Node's default is 30 s). */
const MAX_CHECK_INTERVAL_MS = 1_000;

/** Messages for each time-out that breaks its rule (empty when all are valid). */
export function httpTimeoutIssues(timeouts: HttpTimeouts): string[] {
  const issues: string[] = [];
  for (const [name, value] of Object.entries(timeouts)) {
    if (!(Number.isInteger(value) && value >= 1)) issues.push(`\`${name}\` must be an integer ≥ 1 (got ${value})`);
  }
  if (timeouts.headersTimeoutMs > timeouts.requestTimeoutMs) issues.push(`\`headersTimeoutMs\` must be at most \`requestTimeoutMs\` (${timeouts.requestTimeoutMs}) (got ${timeouts.headersTimeoutMs})`);
  return issues;
}

/** The `node:http` server options of `timeouts` (checked often enough that a cut comes within a fraction of them). */
export function httpServerOptions(timeouts: HttpTimeouts = DEFAULT_HTTP_TIMEOUTS): ServerOptions {
  return {
    headersTimeout: timeouts.headersTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(1, Math.min(MAX_CHECK_INTERVAL_MS, Math.floor(timeouts.headersTimeoutMs / 4))),
  };
}
