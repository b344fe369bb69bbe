import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSilentLogger } from '../../src/log.js';
import { createPrometheusMetrics } from '../../src/monitor/metrics.js';
import { startMcpServers } from '../../workers/tools/mcp/manager.js';
import { ToolRegistry } from '../../workers/tools/registry.js';
import { mcpServers, openMcpRig, startEverythingServer, type McpRig } from '../helpers/mcp.js';

describe('MCP servers over Streamable HTTP: @modelcontextprotocol/server-everything', () => {
  let everything: Awaited<ReturnType<typeof startEverythingServer>>;
  let rig: McpRig;

  beforeAll(async () => {
    everything = await startEverythingServer();
    rig = await openMcpRig(mcpServers({ everything: { url: everything.url, headers: { 'X-Token': '${EVERYTHING_TOKEN}' }, timeoutMs: 1500 } }, { EVERYTHING_TOKEN: 'token-123456' }));
  }, 60_000);

  afterAll(async () => {
    await rig?.close();
    await everything?.close();
  });

  it('connects over Streamable HTTP and offers its tools, read-only ones without side effects', () => {
    expect(rig.servers.status()).toEqual([expect.objectContaining({ name: 'everything', transport: 'http', state: 'connected' })]);
    expect(rig.tools.names()).toEqual(expect.arrayContaining(['mcp__everything__echo', 'mcp__everything__get-tiny-image', 'mcp__everything__trigger-long-running-operation']));
    expect(rig.tools.hasSideEffects('mcp__everything__get-tiny-image')).toBe(false);
  });

  it('cancels its slow tool on the call timeout', async () => {
    const result = await rig.call('mcp__everything__trigger-long-running-operation', { duration: 20, steps: 4 });
    expect(result).toBe('Error: tool mcp__everything__trigger-long-running-operation failed: timed out after 1500 ms');
    expect(rig.metrics.events).toContainEqual({ type: 'mcp_tool_call', server: 'everything', tool: 'trigger-long-running-operation', outcome: 'timeout' });
    // The connection stays usable after the cancellation.
    expect(await rig.call('mcp__everything__echo', { message: 'still here' })).toContain('still here');
  });

  it('turns an isError result into an error the model reads', async () => {
    const result = await rig.call('mcp__everything__get-sum', { a: 'one', b: 2 });
    expect(result).toMatch(/^Error: tool mcp__everything__get-sum failed: MCP server "everything" reported an error: .*(validation|invalid)/i);
    expect(rig.metrics.events).toContainEqual({ type: 'mcp_tool_call', server: 'everything', tool: 'get-sum', outcome: 'error' });
  });

  it('names its image in the result text with a short line (the image itself follows the tool results)', async () => {
    const result = await rig.call('mcp__everything__get-tiny-image', {});
    expect(result).toMatch(/\[image image\/png, [\d.]+ KB: image 1 of this call, after the tool results\]/);
    expect(result.length).toBeLessThan(500);
  });

  it('counts each call in /metrics by server, tool and outcome', async () => {
    const tools = new ToolRegistry();
    const metrics = createPrometheusMetrics({ processMetrics: false });
    const servers = startMcpServers({ tools, logger: createSilentLogger(), metrics }, { servers: mcpServers({ everything: { url: everything.url } }) });
    try {
      await servers.ready();
      const call = (name: string, args: unknown) => tools.execute({ id: name, type: 'function', function: { name, arguments: JSON.stringify(args) } }, {
        sessionId: 't:1', callId: name, idempotencyKey: `t:1:turn:${name}`, notes: { list: async () => ({}), set: async () => undefined, remove: async () => false },
        searchTranscript: async () => [], requestCompaction: () => undefined, now: () => new Date(),
      });
      await call('mcp__everything__echo', { message: 'one' });
      await call('mcp__everything__echo', { message: 'two' });
      await call('mcp__everything__get-sum', { a: 'one', b: 2 });
      const text = await metrics.registry.metrics();
      expect(text).toContain('chatgate_mcp_tool_calls_total{server="everything",tool="echo",outcome="ok"} 2');
      expect(text).toContain('chatgate_mcp_tool_calls_total{server="everything",tool="get-sum",outcome="error"} 1');
    } finally {
      await servers.close();
    }
  });

  it('gives structured content as JSON', async () => {
    const result = await rig.call('mcp__everything__get-structured-content', { location: 'New York' });
    expect(result).toContain('"temperature"');
  });
});

/** A pass-through HTTP proxy in front of `target` that keeps every JSON-RPC message the client posts. */
async function recordingProxy(target: string): Promise<{ url: string; posted: Array<Record<string, unknown>>; close(): Promise<void> }> {
  const upstream = new URL(target);
  const posted: Array<Record<string, unknown>> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'POST' && body.length > 0) {
        const parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown> | Array<Record<string, unknown>>;
        posted.push(...(Array.isArray(parsed) ? parsed : [parsed]));
      }
      const forward = request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forward.on('error', () => res.destroy());
      forward.end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}`,
    posted,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

describe('MCP cancellation at the everything server (its long-running tool)', () => {
  it('sends notifications/cancelled for the call on its timeout and on /stop', async () => {
    const everything = await startEverythingServer();
    const proxy = await recordingProxy(everything.url);
    const rig = await openMcpRig(mcpServers({ everything: { url: proxy.url, timeoutMs: 1500 } }));
    const callIds = () => proxy.posted.filter((m) => m.method === 'tools/call' && (m.params as { name?: string }).name === 'trigger-long-running-operation').map((m) => m.id);
    const cancelled = () => proxy.posted.filter((m) => m.method === 'notifications/cancelled').map((m) => (m.params as { requestId: unknown }).requestId);
    try {
      expect(await rig.call('mcp__everything__trigger-long-running-operation', { duration: 20, steps: 4 })).toBe('Error: tool mcp__everything__trigger-long-running-operation failed: timed out after 1500 ms');
      expect(callIds()).toHaveLength(1);
      await vi.waitFor(() => expect(cancelled()).toEqual(callIds()), { timeout: 5000 });
      const stop = new AbortController();
      const stopped = rig.call('mcp__everything__trigger-long-running-operation', { duration: 20, steps: 4 }, stop.signal);
      await vi.waitFor(() => expect(callIds()).toHaveLength(2), { timeout: 5000 });
      stop.abort();
      expect(await stopped).toBe('Error: tool mcp__everything__trigger-long-running-operation failed: stopped (/stop)');
      await vi.waitFor(() => expect(cancelled()).toEqual(callIds()), { timeout: 5000 });
      expect(rig.metrics.events.filter((e) => e.type === 'mcp_tool_call').map((e) => 'outcome' in e && e.outcome)).toEqual(['timeout', 'cancelled']);
    } finally {
      await rig.close();
      await proxy.close();
      await everything.close();
    }
  }, 60_000);
});

describe('MCP servers over HTTP: fallback and outages', () => {
  it('falls back to SSE when the server does not speak Streamable HTTP', async () => {
    const sse = await startEverythingServer('sse');
    const rig = await openMcpRig(mcpServers({ legacy: { url: sse.url.replace(/\/mcp$/, '/sse') } }));
    try {
      expect(rig.servers.status()[0]).toMatchObject({ state: 'connected', transport: 'http' });
      expect(await rig.call('mcp__legacy__echo', { message: 'over sse' })).toContain('over sse');
    } finally {
      await rig.close();
      await sse.close();
    }
  });

  it('reports a server that cannot be reached and a call to it names the server', async () => {
    const rig = await openMcpRig(mcpServers({ away: { url: 'http://127.0.0.1:9/mcp', connectTimeoutMs: 1000 } }));
    try {
      expect(rig.servers.status()[0]).toMatchObject({ state: 'reconnecting', lastError: expect.stringMatching(/^could not start: /) });
    } finally {
      await rig.close();
    }
  });
});
