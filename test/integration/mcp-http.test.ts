import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

  it('shows its image as a short placeholder', async () => {
    const result = await rig.call('mcp__everything__get-tiny-image', {});
    expect(result).toMatch(/\[image image\/png, [\d.]+ KB: not shown to the model\]/);
    expect(result.length).toBeLessThan(500);
  });

  it('gives structured content as JSON', async () => {
    const result = await rig.call('mcp__everything__get-structured-content', { location: 'New York' });
    expect(result).toContain('"temperature"');
  });
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
