import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capToolResult } from '../../workers/model-request.js';
import { TOOL_NAME_RULE } from '../../workers/tools/mcp/tool-names.js';
import { mcpServerEntry, mcpServers, openMcpRig, TEST_SERVER, type McpRig } from '../helpers/mcp.js';
import { createTokenCounter } from '../../src/llm/encodings.js';
import { createLogSink } from '../helpers/log-sink.js';

const rigs: McpRig[] = [];
afterEach(async () => {
  await Promise.all(rigs.splice(0).map((rig) => rig.close()));
});

async function rig(servers: Record<string, unknown>, env: Record<string, string> = {}): Promise<McpRig> {
  const opened = await openMcpRig(mcpServers(servers, env));
  rigs.push(opened);
  return opened;
}

function testServer(mode: string, extra: Record<string, unknown> = {}, marker?: string) {
  return { command: process.execPath, args: [TEST_SERVER, mode, ...(marker ? [marker] : [])], ...extra };
}

describe('MCP servers over stdio: @modelcontextprotocol/server-filesystem', () => {
  it('reads a file, lists the allowed folder, and writes only through a side-effecting tool', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cg-mcp-fs-'));
    writeFileSync(join(dir, 'notes.txt'), 'the launch code is ORD-48213-XK');
    const { tools, call, servers } = await rig({ filesystem: { command: process.execPath, args: [mcpServerEntry('server-filesystem'), dir] } });
    expect(servers.status()).toEqual([expect.objectContaining({ name: 'filesystem', state: 'connected', transport: 'stdio' })]);
    expect(await call('mcp__filesystem__read_file', { path: join(dir, 'notes.txt') })).toBe('the launch code is ORD-48213-XK');
    expect(await call('mcp__filesystem__list_allowed_directories', {})).toContain(dir);
    const byName = new Map(tools.schemas().map((schema) => [schema.function.name, schema]));
    expect(byName.has('mcp__filesystem__write_file')).toBe(true);
    expect(tools.hasSideEffects('mcp__filesystem__write_file')).toBe(true);
    expect(tools.hasSideEffects('mcp__filesystem__read_text_file')).toBe(false);
    await call('mcp__filesystem__write_file', { path: join(dir, 'out.txt'), content: 'written' });
    expect(readFileSync(join(dir, 'out.txt'), 'utf8')).toBe('written');
    const outside = await call('mcp__filesystem__read_file', { path: '/etc/hostname' });
    expect(outside).toMatch(/^Error: tool mcp__filesystem__read_file failed: MCP server "filesystem" reported an error: .*denied/i);
  });
});

describe('MCP servers over stdio: bad servers', () => {
  it('passes the idempotency key of a side-effecting call in _meta, none for a read-only one', async () => {
    const { call } = await rig({ t: testServer('ok') });
    expect(JSON.parse(await call('mcp__t__act', {}))).toEqual({ meta: { idempotencyKey: 'test:1:turn-1:call_1' } });
    expect(JSON.parse(await call('mcp__t__echo', { text: 'hi' }))).toEqual({ args: { text: 'hi' }, meta: null });
  });

  it('names invalid, over-long and colliding tool names within the rule, deterministically, and passes $ref schemas unchanged', async () => {
    const { tools } = await rig({ t: testServer('ok') });
    const names = tools.names().filter((name) => name.startsWith('mcp__t__'));
    for (const name of names) expect(name).toMatch(TOOL_NAME_RULE);
    expect(names).toContain('mcp__t__bad_name_');
    const collided = names.filter((name) => name.startsWith('mcp__t__a_b_'));
    expect(collided).toHaveLength(2);
    expect(names.filter((name) => name.startsWith('mcp__t__long_'))).toEqual([expect.stringMatching(/^mcp__t__long_x+_[0-9a-f]{8}$/)]);
    const refs = tools.schemas().find((schema) => schema.function.name === 'mcp__t__with_refs')!;
    expect(refs.function.parameters).toEqual({ type: 'object', properties: { where: { $ref: '#/$defs/place' } }, required: ['where'], $defs: { place: { type: 'object', properties: { city: { type: 'string' } } } } });
    const again = await rig({ t: testServer('ok') });
    expect(again.tools.names().filter((name) => name.startsWith('mcp__t__'))).toEqual(names);
  });

  it('cancels a call at the server on its timeout and on /stop', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'cg-mcp-cancel-')), 'marker');
    const { call, metrics } = await rig({ t: testServer('ok', { timeoutMs: 300 }, marker) });
    expect(await call('mcp__t__slow', { ms: 20_000 })).toMatch(/^Error: tool mcp__t__slow failed: timed out after 300 ms\. It may or may not have taken effect; /);
    await vi.waitFor(() => expect(existsSync(marker) && readFileSync(marker, 'utf8')).toBe('cancelled\n'), { timeout: 5000 });
    const stop = new AbortController();
    const stopped = call('mcp__t__slow', { ms: 20_000 }, stop.signal);
    setTimeout(() => stop.abort(), 50);
    expect(await stopped).toBe('Error: tool mcp__t__slow failed: stopped (/stop)');
    await vi.waitFor(() => expect(readFileSync(marker, 'utf8')).toBe('cancelled\ncancelled\n'), { timeout: 5000 });
    await vi.waitFor(() => expect(metrics.events.filter((event) => event.type === 'mcp_tool_call').map((event) => 'outcome' in event && event.outcome)).toEqual(['timeout', 'cancelled']));
  });

  it('keeps working with a server that prints non-JSON on stdout, and says so in its status', async () => {
    const { call, servers } = await rig({ t: testServer('noise') });
    expect(JSON.parse(await call('mcp__t__echo', { text: 'through the noise' }))).toMatchObject({ args: { text: 'through the noise' } });
    expect(servers.status()[0]).toMatchObject({ state: 'connected', lastError: expect.stringMatching(/^protocol error: /) });
  });

  it('reports a server that never answers initialize, without taking the worker down', async () => {
    const { tools, servers } = await rig({ t: testServer('silent', { connectTimeoutMs: 300 }) });
    expect(servers.status()[0]).toMatchObject({ state: 'reconnecting', tools: 0, lastError: 'did not answer initialize within 300 ms' });
    expect(tools.names().some((name) => name.startsWith('mcp__'))).toBe(false);
  });

  it('answers a call to a server that crashed mid-call with an error naming it, and reconnects', async () => {
    const { call, servers, metrics } = await rig({ t: testServer('ok') });
    const result = await call('mcp__t__crash', {});
    expect(result).toMatch(/^Error: tool mcp__t__crash failed: MCP server "t" closed the connection during the call \(it exited or crashed.*\); the outcome is unknown/);
    const meanwhile = await call('mcp__t__echo', {});
    expect(meanwhile === '{"args":{},"meta":null}' || meanwhile.includes('MCP server "t" is not connected')).toBe(true);
    await vi.waitFor(() => expect(servers.status()[0]).toMatchObject({ state: 'connected' }), { timeout: 30_000 });
    expect(JSON.parse(await call('mcp__t__echo', { text: 'back' }))).toMatchObject({ args: { text: 'back' } });
    expect(metrics.events).toContainEqual({ type: 'mcp_tool_call', server: 't', tool: 'crash', outcome: 'unavailable' });
  });

  it('reconnects to a server that stopped answering after a call timed out', async () => {
    const { call, servers } = await rig({ t: testServer('ok', { timeoutMs: 300, connectTimeoutMs: 10_000 }) });
    expect(await call('mcp__t__freeze', {})).toMatch(/^Error: tool mcp__t__freeze failed: timed out after 300 ms\. It may or may not have taken effect; /);
    await vi.waitFor(() => expect(servers.status()[0]!.lastError).toBe('the server stopped answering (a call timed out, then a ping did too)'), { timeout: 30_000 });
    await vi.waitFor(() => expect(servers.status()[0]).toMatchObject({ state: 'connected' }), { timeout: 30_000 });
    expect(JSON.parse(await call('mcp__t__echo', { text: 'fresh' }))).toMatchObject({ args: { text: 'fresh' } });
  });

  // The SDK's stdio read buffer copies the message on every chunk: 10 MB takes seconds of CPU (20 s on a loaded 2-core machine).
  it('takes a 10 MB result and the tool-result cap bounds it', { timeout: 180_000 }, async () => {
    const { call } = await rig({ t: testServer('ok', { timeoutMs: 150_000 }) });
    const result = await call('mcp__t__big', {});
    expect(result.length).toBe(10 * 1024 * 1024);
    const capped = capToolResult(result, 2000, createTokenCounter());
    expect(capped.length).toBeLessThan(20_000);
    expect(capped).toMatch(/characters cut from this tool result/);
  });

  it('offers the new list after notifications/tools/list_changed', async () => {
    const { call, tools } = await rig({ t: testServer('ok') });
    expect(tools.names()).not.toContain('mcp__t__late_tool');
    expect(await call('mcp__t__add_tool', {})).toBe('added');
    await vi.waitFor(() => expect(tools.names()).toContain('mcp__t__late_tool'), { timeout: 5000 });
  });

  it('applies the allow and deny lists, and never offers a deny tool', async () => {
    const { tools } = await rig({ t: testServer('ok', { tools: { allow: ['echo', 'a*', 'slow'], deny: ['a_b'] }, approval: { slow: 'deny' } }) });
    // a_b is denied, so a.b no longer collides with it; slow's policy is deny.
    expect(tools.names().filter((name) => name.startsWith('mcp__')).sort()).toEqual(['mcp__t__a_b', 'mcp__t__act', 'mcp__t__add_tool', 'mcp__t__echo']);
  });

  it('never lets a secret from the environment reach a log line, an error text the model reads, or the status', async () => {
    const secret = 'sk-never-shown-0042';
    // The server prints its secret on stderr, then crashes in a call: its last stderr line goes into the error text.
    const script = `console.error("token is " + process.env.TOOL_TOKEN); import(${JSON.stringify(pathToFileURL(TEST_SERVER).href)})`;
    const sink = createLogSink('debug');
    const opened = await openMcpRig(mcpServers({ s: { command: process.execPath, args: ['-e', script, '-', 'ok'], env: { TOOL_TOKEN: '${TOOL_TOKEN}' } } }, { TOOL_TOKEN: secret }), sink.logger);
    rigs.push(opened);
    expect(opened.servers.status()[0]).toMatchObject({ state: 'connected' });
    const result = await opened.call('mcp__s__crash', {});
    expect(result).toContain('its last stderr line: token is [Redacted]');
    await vi.waitFor(() => expect(opened.servers.status()[0]).toMatchObject({ state: 'connected' }), { timeout: 30_000 });
    await sink.waitFor((line) => String(line.stderr ?? '').includes('token is [Redacted]'));
    const seen = [result, JSON.stringify(opened.servers.status()), ...sink.lines.map((line) => JSON.stringify(line)), ...opened.tools.schemas().map((schema) => JSON.stringify(schema))];
    expect(seen.filter((text) => text.includes(secret))).toEqual([]);
  });

  it('never shows a secret from the environment in its status', async () => {
    const script = 'console.error("token is " + process.env.TOOL_TOKEN); process.exit(1)';
    const { servers } = await rig({ s: { command: process.execPath, args: ['-e', script], env: { TOOL_TOKEN: '${TOOL_TOKEN}' }, connectTimeoutMs: 2000 } }, { TOOL_TOKEN: 'sk-very-secret-value' });
    const status = servers.status()[0]!;
    expect(status.state).toBe('reconnecting');
    expect(status.lastError).toContain('token is [Redacted]');
    expect(JSON.stringify(status)).not.toContain('sk-very-secret-value');
  });
});
