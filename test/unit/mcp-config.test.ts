import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { approvalOf, loadMcpConfig, matchesAny, parseMcpConfig } from '../../workers/tools/mcp/config.js';

const BASE = { OPENAI_API_KEY: 'k' };

function writeJson(value: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'cg-mcp-config-'));
  const file = join(dir, 'mcp.json');
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
  return file;
}

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('MCP configuration', () => {
  it('reads stdio and HTTP servers with their defaults', () => {
    const file = writeJson({ mcpServers: {
      filesystem: { command: 'node', args: ['server.js', '/data'], tools: { deny: ['move_*'] }, approval: { 'write_*': 'ask' } },
      remote: { url: 'https://tools.example.com/mcp', headers: { Authorization: 'Bearer ${TOOLS_TOKEN}' }, timeoutMs: 5000, enabled: false },
    } });
    const config = loadConfig({ ...BASE, CHATGATE_MCP_CONFIG: file, TOOLS_TOKEN: 'secret-token-123' });
    const [fs, remote] = config.mcp.servers;
    expect(config.mcp.file).toBe(file);
    expect(fs).toMatchObject({ name: 'filesystem', transport: { type: 'stdio', command: 'node', args: ['server.js', '/data'], env: {} }, deny: ['move_*'], timeoutMs: 30_000, enabled: true });
    expect(remote).toMatchObject({ name: 'remote', transport: { type: 'http', headers: { Authorization: 'Bearer secret-token-123' } }, timeoutMs: 5000, enabled: false });
    expect(remote!.secrets).toContain('secret-token-123');
  });

  it('names all three mistakes of a bad file in one error, without echoing a secret', () => {
    const file = writeJson({ mcpServers: {
      files: { command: 'node', timeoutMs: -5, approval: 'sometimes' },
      remote: { url: 'https://tools.example.com/mcp', headers: { Authorization: 'Bearer ${MISSING_TOKEN}' } },
    } });
    const error = configError({ ...BASE, CHATGATE_MCP_CONFIG: file, CHATGATE_THRESHOLD: '2' });
    const text = error.message;
    expect(error.issues).toHaveLength(4);
    expect(text).toContain('`CHATGATE_THRESHOLD` must be a number in (0, 1)');
    expect(text).toContain(`${file}: \`mcpServers.files.timeoutMs\` must be an integer in [100, 3600000] (ms)`);
    expect(text).toContain(`${file}: \`mcpServers.files.approval\` must be \`auto\`, \`ask\`, \`deny\``);
    expect(text).toContain("`mcpServers.remote.headers.Authorization` uses ${MISSING_TOKEN}, which is not set in chatgate's environment");
  });

  it('refuses unknown keys, both or neither transport, and a file that is not JSON', () => {
    const { issues } = parseMcpConfig({ mcpServers: { a: { command: 'x', url: 'http://h/mcp' }, b: {}, c: { comand: 'x' } } }, {});
    expect(issues).toEqual([
      '`mcpServers.a` must have either `command` (stdio) or `url` (HTTP), not both',
      '`mcpServers.b` must have `command` (a stdio server) or `url` (an HTTP server)',
      expect.stringMatching(/^`comand` in `mcpServers.c` is not an option \(known: type, command, args/),
    ]);
    expect(parseMcpConfig({ servers: {} }, {}).issues).toEqual([
      expect.stringMatching(/^`mcpServers` must be an object of server name/),
      '`servers` in the file is not an option (known: mcpServers)',
    ]);
    const bad = loadMcpConfig(writeJson('{ not json'), {}, tmpdir());
    expect(bad.issues[0]).toMatch(/`CHATGATE_MCP_CONFIG` must name a readable JSON file/);
  });

  it('reads chatgate.mcp.json from the working directory by default, and nothing when it is absent', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cg-mcp-cwd-'));
    expect(loadMcpConfig(undefined, {}, dir).config.servers).toEqual([]);
    writeFileSync(join(dir, 'chatgate.mcp.json'), JSON.stringify({ mcpServers: { fs: { command: 'node' } } }));
    expect(loadMcpConfig(undefined, {}, dir).config.servers.map((s) => s.name)).toEqual(['fs']);
  });

  it('matches tool names and globs; approval defaults by read-only', () => {
    expect(matchesAny('write_file', ['write_*'])).toBe(true);
    expect(matchesAny('rewrite_file', ['write_*'])).toBe(false);
    expect(matchesAny('read_file', ['read_fil?'])).toBe(true);
    expect(approvalOf({}, 'read_file', true)).toBe('auto');
    expect(approvalOf({}, 'write_file', false)).toBe('ask');
    expect(approvalOf({ approval: 'deny' }, 'read_file', true)).toBe('deny');
    expect(approvalOf({ approval: { 'write_*': 'auto' } }, 'write_file', false)).toBe('auto');
    expect(approvalOf({ approval: { 'write_*': 'auto' } }, 'delete_file', false)).toBe('ask');
  });
});
