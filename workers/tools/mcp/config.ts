import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';

/** The file read when `CHATGATE_MCP_CONFIG` is unset and it exists in the working directory. */
export const DEFAULT_MCP_CONFIG_FILE = 'chatgate.mcp.json';
/** Default timeout of one MCP tool call, ms. */
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 30_000;
/** Default time a server has to start and answer `initialize`, ms. */
export const DEFAULT_MCP_CONNECT_TIMEOUT_MS = 20_000;

/** What happens when the model calls a tool: run it, ask the user first, or never offer it. */
export type ApprovalPolicy = 'auto' | 'ask' | 'deny';

/** How chatgate reaches one server. */
export type McpTransportConfig =
  | { type: 'stdio'; command: string; args: readonly string[]; env: Readonly<Record<string, string>>; cwd?: string }
  /** Streamable HTTP, falling back to SSE when the server answers that way; `sse` skips the first try. */
  | { type: 'http' | 'sse'; url: string; headers: Readonly<Record<string, string>> };

/** One server of the `mcpServers` file, validated, `${VAR}`s filled in. */
export interface McpServerConfig {
  /** Its key in `mcpServers`. */
  name: string;
  transport: McpTransportConfig;
  /** Tool names or globs (`*`, `?`) offered; undefined: all. */
  allow?: readonly string[];
  /** Tool names or globs never offered (wins over `allow`). */
  deny: readonly string[];
  /** Timeout of one call, ms. */
  timeoutMs: number;
  /** Time to start and answer `initialize`, ms. */
  connectTimeoutMs: number;
  /** One policy for every tool, or one per tool name or glob; unset: read-only tools `auto`, others `ask`. */
  approval?: ApprovalPolicy | Readonly<Record<string, ApprovalPolicy>>;
  enabled: boolean;
  /** Values that came from `${VAR}`s or headers: never shown in a log line, an error or to the model. */
  secrets: readonly string[];
}

/** The MCP configuration: the file read (if any) and its servers. */
export interface McpConfig {
  file?: string;
  servers: readonly McpServerConfig[];
}

const policy = z.enum(['auto', 'ask', 'deny']);
const stringMap = z.record(z.string(), z.string());
const serverSchema = z.strictObject({
  type: z.enum(['stdio', 'http', 'streamable-http', 'sse']).optional(),
  command: z.string().min(1).optional(),
  args: z.array(z.string()).optional(),
  env: stringMap.optional(),
  cwd: z.string().min(1).optional(),
  url: z.url({ protocol: /^https?$/ }).optional(),
  headers: stringMap.optional(),
  tools: z.strictObject({ allow: z.array(z.string().min(1)).optional(), deny: z.array(z.string().min(1)).optional() }).optional(),
  timeoutMs: z.number().int().min(100).max(3_600_000).optional(),
  connectTimeoutMs: z.number().int().min(100).max(600_000).optional(),
  approval: z.union([policy, z.record(z.string().min(1), policy)]).optional(),
  enabled: z.boolean().optional(),
});
const fileSchema = z.strictObject({ mcpServers: z.record(z.string().regex(/^[\w.-]{1,64}$/), z.unknown()) });
const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Reads the MCP configuration: `file` (CHATGATE_MCP_CONFIG), else `chatgate.mcp.json` in `cwd`
 * when it exists, else no servers. `${VAR}` in `env` and `headers` values is read from `env`.
 * @returns the servers, or every problem of the file (one line each; never a secret value).
 */
export function loadMcpConfig(file: string | undefined, env: Readonly<Record<string, string | undefined>>, cwd: string): { config: McpConfig; issues: string[] } {
  const path = file ?? (existsSync(resolve(cwd, DEFAULT_MCP_CONFIG_FILE)) ? resolve(cwd, DEFAULT_MCP_CONFIG_FILE) : undefined);
  if (!path) return { config: { servers: [] }, issues: [] };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(resolve(cwd, path), 'utf8'));
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { config: { file: path, servers: [] }, issues: [`\`CHATGATE_MCP_CONFIG\` must name a readable JSON file (${path}: ${why})`] };
  }
  const { servers, issues } = parseMcpConfig(raw, env);
  return { config: { file: path, servers }, issues: issues.map((issue) => `${path}: ${issue}`) };
}

/** Validates a parsed `{"mcpServers": {...}}` object. @returns the servers and every problem found. */
export function parseMcpConfig(raw: unknown, env: Readonly<Record<string, string | undefined>>): { servers: McpServerConfig[]; issues: string[] } {
  const top = fileSchema.safeParse(raw);
  if (!top.success) return { servers: [], issues: top.error.issues.map((issue) => describe(issue, [])) };
  const servers: McpServerConfig[] = [];
  const issues: string[] = [];
  for (const [name, value] of Object.entries(top.data.mcpServers)) {
    const parsed = serverSchema.safeParse(value);
    if (!parsed.success) {
      issues.push(...parsed.error.issues.map((issue) => describe(issue, ['mcpServers', name])));
      continue;
    }
    const server = toServer(name, parsed.data, env, issues);
    if (server) servers.push(server);
  }
  return { servers, issues };
}

/** Whether `name` matches one of `patterns` (exact names or globs with `*` and `?`). */
export function matchesAny(name: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => globRegExp(pattern).test(name));
}

/** The approval policy of tool `tool` of `server`: configured, else `auto` when read-only and `ask` otherwise. */
export function approvalOf(server: Pick<McpServerConfig, 'approval'>, tool: string, readOnly: boolean): ApprovalPolicy {
  const fallback: ApprovalPolicy = readOnly ? 'auto' : 'ask';
  const configured = server.approval;
  if (configured === undefined) return fallback;
  if (typeof configured === 'string') return configured;
  if (configured[tool]) return configured[tool]!;
  const glob = Object.keys(configured).find((pattern) => globRegExp(pattern).test(tool));
  return glob ? configured[glob]! : fallback;
}

type ServerInput = z.infer<typeof serverSchema>;

function toServer(name: string, s: ServerInput, env: Readonly<Record<string, string | undefined>>, issues: string[]): McpServerConfig | null {
  const at = `mcpServers.${name}`;
  const secrets: string[] = [];
  const before = issues.length;
  const expand = (field: string, map: Record<string, string> | undefined) => expandAll(`${at}.${field}`, map ?? {}, env, secrets, issues);
  let transport: McpTransportConfig | null = null;
  if (s.command && s.url) issues.push(`\`${at}\` must have either \`command\` (stdio) or \`url\` (HTTP), not both`);
  else if (s.command) {
    if (s.type && s.type !== 'stdio') issues.push(`\`${at}.type\` must be \`stdio\` with \`command\` (got ${s.type})`);
    if (s.headers) issues.push(`\`${at}.headers\` is for HTTP servers (\`url\`), not with \`command\``);
    transport = { type: 'stdio', command: s.command, args: s.args ?? [], env: expand('env', s.env), ...(s.cwd ? { cwd: s.cwd } : {}) };
  } else if (s.url) {
    if (s.args || s.env || s.cwd) issues.push(`\`${at}\`: \`args\`, \`env\` and \`cwd\` are for stdio servers (\`command\`), not with \`url\``);
    if (s.type === 'stdio') issues.push(`\`${at}.type\` must be \`http\` or \`sse\` with \`url\` (got stdio)`);
    transport = { type: s.type === 'sse' ? 'sse' : 'http', url: s.url, headers: expand('headers', s.headers) };
    secrets.push(...Object.values(transport.headers));
  } else issues.push(`\`${at}\` must have \`command\` (a stdio server) or \`url\` (an HTTP server)`);
  if (!transport || issues.length > before) return null;
  return {
    name, transport, deny: s.tools?.deny ?? [], ...(s.tools?.allow ? { allow: s.tools.allow } : {}),
    timeoutMs: s.timeoutMs ?? DEFAULT_MCP_CALL_TIMEOUT_MS, connectTimeoutMs: s.connectTimeoutMs ?? DEFAULT_MCP_CONNECT_TIMEOUT_MS,
    ...(s.approval !== undefined ? { approval: s.approval } : {}), enabled: s.enabled ?? true, secrets: secrets.filter((value) => value.length >= 4),
  };
}

/** Fills `${VAR}`s in every value of `map`; a variable that is not set is an issue naming it (never its value). */
function expandAll(at: string, map: Record<string, string>, env: Readonly<Record<string, string | undefined>>, secrets: string[], issues: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(map)) {
    out[key] = value.replace(VAR, (_match, variable: string) => {
      const found = env[variable];
      if (found === undefined || found === '') {
        issues.push(`\`${at}.${key}\` uses \${${variable}}, which is not set in chatgate's environment`);
        return '';
      }
      secrets.push(found);
      return found;
    });
  }
  return out;
}

const RULES: Record<string, string> = {
  type: '`stdio`, `http` or `sse`', command: 'a non-empty string', args: 'a list of strings', env: 'an object of string values',
  cwd: 'a directory path', url: 'an http(s) URL', headers: 'an object of string values', tools: 'an object `{ "allow": [...], "deny": [...] }` of tool names or globs',
  allow: 'a list of tool names or globs', deny: 'a list of tool names or globs', timeoutMs: 'an integer in [100, 3600000] (ms)',
  connectTimeoutMs: 'an integer in [100, 600000] (ms)', approval: '`auto`, `ask`, `deny` or an object of tool name or glob → one of them', enabled: 'true or false',
  mcpServers: 'an object of server name (letters, digits, `_.-`, at most 64) → server',
};

/** One issue as a line naming the field and its rule; values of env and headers are never echoed. */
function describe(issue: z.core.$ZodIssue, prefix: string[]): string {
  const path = [...prefix, ...issue.path.map(String)];
  if (issue.code === 'unrecognized_keys') {
    const where = path.length > 0 ? `\`${path.join('.')}\`` : 'the file';
    return `${issue.keys.map((key) => `\`${key}\``).join(', ')} in ${where} ${issue.keys.length > 1 ? 'are not options' : 'is not an option'} (known: ${Object.keys(path.length === 0 ? { mcpServers: 1 } : serverSchema.shape).join(', ')})`;
  }
  const field = [...path].reverse().find((part) => RULES[part] !== undefined && !/^\d+$/.test(part)) ?? '';
  const rule = RULES[field] ?? issue.message;
  return `\`${path.join('.') || 'the file'}\` must be ${rule}`;
}

function globRegExp(pattern: string): RegExp {
  const source = pattern.split('').map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&'))).join('');
  return new RegExp(`^${source}$`);
}
