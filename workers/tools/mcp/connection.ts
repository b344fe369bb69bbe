import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { backoffDelayMs, type RetryPolicy } from '../../../src/core/retry.js';
import { truncateText } from '../../../src/core/text.js';
import type { Logger } from '../../../src/log.js';
import type { McpServerBeat } from '../../../src/redis/heartbeats.js';
import { matchesAny, type McpServerConfig } from './config.js';

/** Largest message a stdio server may send, bytes (above it the connection is dropped and made again). */
export const MAX_STDIO_MESSAGE_BYTES = 64 * 1024 * 1024;
/** Reconnect backoff: 1 s doubling to 60 s, retried for as long as the worker runs. */
export const MCP_RECONNECT_POLICY: Readonly<Partial<RetryPolicy>> = Object.freeze({ baseDelayMs: 1000, maxDelayMs: 60_000 });
const ERROR_CHARS = 300;
/** How long a ping after a timed-out call may take, ms (at most the server's `connectTimeoutMs`). */
const PING_TIMEOUT_MS = 5000;

/** What a connection needs. */
export interface McpConnectionDeps {
  logger: Logger;
  /** Called with the server's (allowed) tools each time it connects or they change. */
  onTools(server: string, tools: readonly Tool[]): void;
}

/** Options of a connection. */
export interface McpConnectionOptions {
  /** Version sent as the client's. */
  version: string;
  /** Reconnect backoff; default {@link MCP_RECONNECT_POLICY}. */
  reconnect?: Partial<RetryPolicy>;
}

/** A call could not reach the server (not connected, closed during the call, refused): `reason` says which. */
export class McpCallError extends Error {
  constructor(message: string, readonly reason: 'unavailable' | 'timeout' | 'closed' | 'refused') {
    super(message);
  }
}

/**
 * One MCP server as a worker sees it: connects (a stdio server is this process's child), lists
 * its tools, follows `notifications/tools/list_changed`, and reconnects with a backoff whenever it
 * cannot start, hangs on `initialize`, exits or stops answering. Never throws out of the worker:
 * calls to a server that is away fail with an {@link McpCallError} naming it and what happened.
 */
export class McpConnection {
  private client: Client | null = null;
  private state: McpServerBeat['state'] = 'connecting';
  private tools: readonly Tool[] = [];
  private lastError?: { text: string; atMs: number };
  private stderrTail = '';
  /** A protocol error seen during the current connection attempt. */
  private attemptError: string | undefined;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly log: Logger;

  constructor(readonly server: McpServerConfig, private readonly deps: McpConnectionDeps, private readonly options: McpConnectionOptions) {
    this.log = deps.logger.child({ mcpServer: server.name });
  }

  /** Makes the first attempt; @returns when it connected or failed (a failure schedules the next). */
  async start(): Promise<void> {
    await this.connect();
  }

  /** The server's state for the heartbeat. */
  status(): McpServerBeat {
    return {
      name: this.server.name, transport: this.server.transport.type, state: this.state, tools: this.tools.length,
      ...(this.lastError ? { lastError: this.lastError.text, lastErrorAtMs: this.lastError.atMs } : {}),
    };
  }

  /**
   * Calls tool `name`. `signal` (the registry's, aborted by `/stop` and the call's timeout) cancels
   * the call at the server (`notifications/cancelled`); `meta` goes into the request's `_meta`.
   * @throws McpCallError when the server is away, closes, refuses or does not answer in time.
   */
  async call(name: string, args: Record<string, unknown>, options: { signal?: AbortSignal; meta?: Record<string, unknown> }): Promise<CallToolResult> {
    const client = this.client;
    if (this.state !== 'connected' || !client) {
      throw new McpCallError(`MCP server "${this.server.name}" is not connected (${this.lastError?.text ?? 'still starting'}); chatgate keeps reconnecting, try again later`, 'unavailable');
    }
    try {
      const params = { name, arguments: args, ...(options.meta ? { _meta: options.meta } : {}) };
      return (await client.callTool(params, undefined, { signal: options.signal, timeout: this.server.timeoutMs })) as CallToolResult;
    } catch (err) {
      const timedOut = isTimeout(err) || (options.signal?.reason as { name?: string } | undefined)?.name === 'TimeoutError';
      if (timedOut) void this.checkAnswering(client);
      if (options.signal?.aborted) throw err;
      throw this.callFailure(client, err);
    }
  }

  /** Closes the connection (a stdio server is stopped) and stops reconnecting. */
  async close(): Promise<void> {
    this.closed = true;
    this.state = 'disabled';
    clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    await client?.close().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    this.state = this.failures === 0 ? 'connecting' : 'reconnecting';
    this.attemptError = undefined;
    const client = new Client({ name: 'chatgate', version: this.options.version }, {
      capabilities: {},
      listChanged: { tools: { debounceMs: 0, onChanged: (err, tools) => this.onListChanged(client, err, tools) } },
    });
    try {
      await this.open(client);
      const tools = await this.listTools(client);
      if (this.closed) return void (await client.close().catch(() => undefined));
      this.client = client;
      this.failures = 0;
      this.state = 'connected';
      client.onclose = () => this.lost(client, `the server closed the connection${this.stderrHint()}`);
      this.setTools(tools);
      this.log.info({ tools: this.tools.length }, 'MCP server connected');
    } catch (err) {
      await client.close().catch(() => undefined);
      this.failed(this.describeConnectError(err));
    }
  }

  /** After a timed-out call: a server that does not answer a ping either is taken as gone, and reconnected. */
  private async checkAnswering(client: Client): Promise<void> {
    try {
      await client.ping({ timeout: Math.min(PING_TIMEOUT_MS, this.server.connectTimeoutMs) });
    } catch {
      this.lost(client, 'the server stopped answering (a call timed out, then a ping did too)');
    }
  }

  /** Opens the transport and initializes: stdio, or Streamable HTTP falling back to SSE. */
  private async open(client: Client): Promise<void> {
    const t = this.server.transport;
    const request = { timeout: this.server.connectTimeoutMs };
    client.onerror = (err) => this.noteError(err);
    if (t.type === 'stdio') {
      const transport = new StdioClientTransport({ command: t.command, args: [...t.args], env: { ...t.env }, cwd: t.cwd, stderr: 'pipe', maxBufferSize: MAX_STDIO_MESSAGE_BYTES });
      transport.stderr?.on('data', (chunk: Buffer) => this.onStderr(chunk));
      return client.connect(transport, request);
    }
    const init = { requestInit: { headers: { ...t.headers } } };
    if (t.type === 'sse') return client.connect(new SSEClientTransport(new URL(t.url), init), request);
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(t.url), init) as Transport, request);
    } catch (err) {
      if (this.closed || isTimeout(err)) throw err;
      this.log.debug({ err: this.redact(errorText(err)) }, 'MCP server did not take Streamable HTTP; trying SSE');
      await client.close().catch(() => undefined);
      await client.connect(new SSEClientTransport(new URL(t.url), init), request);
    }
  }

  private async listTools(client: Client): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const result = await client.listTools(cursor ? { cursor } : {}, { timeout: this.server.connectTimeoutMs });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools;
  }

  private onListChanged(client: Client, err: Error | null, tools: Tool[] | null): void {
    if (client !== this.client) return;
    if (err || !tools) {
      this.noteError(err ?? new Error('tools/list answered nothing'));
      return;
    }
    this.setTools(tools);
    this.log.info({ tools: this.tools.length }, 'MCP server tools changed');
  }

  private setTools(tools: readonly Tool[]): void {
    this.tools = tools.filter((tool) => (!this.server.allow || matchesAny(tool.name, this.server.allow)) && !matchesAny(tool.name, this.server.deny));
    this.deps.onTools(this.server.name, this.tools);
  }

  /** The connection went away: its tools answer "not connected" until it is back. */
  private lost(client: Client, why: string): void {
    if (client !== this.client || this.closed) return;
    this.client = null;
    void client.close().catch(() => undefined);
    this.failed(why);
  }

  private failed(why: string): void {
    if (this.closed) return;
    this.lastError = { text: why, atMs: Date.now() };
    // Its tools stay offered: a call meanwhile answers why the server is away, not "unknown tool".
    this.failures++;
    this.state = 'reconnecting';
    const delayMs = backoffDelayMs(this.failures, { ...MCP_RECONNECT_POLICY, ...this.options.reconnect }, Math.random());
    this.log.warn({ reason: why, retryInMs: delayMs, failures: this.failures }, 'MCP server unavailable');
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.connect(), delayMs);
    this.timer.unref();
  }

  private callFailure(client: Client, err: unknown): McpCallError {
    const name = `MCP server "${this.server.name}"`;
    if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
      return new McpCallError(`${name} did not answer within ${this.server.timeoutMs} ms; the call was cancelled at the server`, 'timeout');
    }
    if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) {
      this.lost(client, `the server closed the connection during a call${this.stderrHint()}`);
      return new McpCallError(`${name} closed the connection during the call (it exited or crashed${this.stderrHint()}); the outcome is unknown. chatgate reconnects`, 'closed');
    }
    if (err instanceof McpError) return new McpCallError(`${name} refused the call: ${this.redact(errorText(err))}`, 'refused');
    // No JSON-RPC answer at all (HTTP refused, reset): the server is away.
    const why = this.redact(errorText(err));
    this.lost(client, `the call failed: ${why}`);
    return new McpCallError(`${name} could not be reached (${why}); chatgate reconnects`, 'unavailable');
  }

  private describeConnectError(err: unknown): string {
    if (isTimeout(err)) {
      const last = this.attemptError ? `; last error: ${this.attemptError}` : '';
      return `did not answer initialize within ${this.server.connectTimeoutMs} ms${last}${this.stderrHint()}`;
    }
    return `could not start: ${this.redact(errorText(err))}${this.stderrHint()}`;
  }

  /** A protocol error that does not end the connection (a line that is not JSON-RPC, a bad notification). */
  private noteError(err: Error): void {
    const text = this.redact(errorText(err));
    this.lastError = { text: `protocol error: ${text}`, atMs: Date.now() };
    this.attemptError = this.lastError.text;
    this.log.warn({ reason: text }, 'MCP server sent something chatgate could not read');
  }

  private onStderr(chunk: Buffer): void {
    const lines = chunk.toString('utf8').split('\n').map((line) => line.trim()).filter(Boolean);
    if (lines.length > 0) this.stderrTail = truncateText(lines[lines.length - 1]!, 200);
    this.log.debug({ stderr: this.redact(truncateText(chunk.toString('utf8'), 2000)) }, 'MCP server stderr');
  }

  private stderrHint(): string {
    return this.stderrTail ? ` (its last stderr line: ${this.redact(this.stderrTail)})` : '';
  }

  /** `text` with every configured secret value replaced. */
  private redact(text: string): string {
    let out = text;
    for (const secret of this.server.secrets) out = out.split(secret).join('[Redacted]');
    return truncateText(out, ERROR_CHARS);
  }
}

function isTimeout(err: unknown): boolean {
  return err instanceof McpError && err.code === ErrorCode.RequestTimeout;
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message.replace(/\s+/g, ' ').trim() || err.name;
  return String(err);
}
