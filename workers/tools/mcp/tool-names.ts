import { createHash } from 'node:crypto';

/** The chat-completions rule for a tool name. */
export const TOOL_NAME_RULE = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_NAME = 64;
const HASH_CHARS = 8;

/** One tool of one server, before it is named for the model. */
export interface ServerTool {
  server: string;
  tool: string;
}

/** A name that is not the plain `mcp__<server>__<tool>`: why, for the log. */
export interface RenamedTool extends ServerTool {
  name: string;
  reason: 'too long' | 'collision';
}

/**
 * Names every tool `mcp__<server>__<tool>`, characters outside `[a-zA-Z0-9_-]` replaced by `_`.
 * A name over 64 characters, or one that two tools (or a name in `taken`, e.g. a built-in) would
 * share, becomes its first 55 characters, `_` and 8 hex characters of a hash of server and tool:
 * the same tools always get the same names, whatever their order.
 * @returns the name of each tool (key `server\0tool`) and the renamed ones.
 */
export function nameServerTools(tools: readonly ServerTool[], taken: ReadonlySet<string> = new Set()): { names: Map<string, string>; renamed: RenamedTool[] } {
  const plain = tools.map((entry) => `mcp__${sanitize(entry.server)}__${sanitize(entry.tool)}`);
  const uses = new Map<string, number>();
  for (const name of plain) uses.set(name, (uses.get(name) ?? 0) + 1);
  const names = new Map<string, string>();
  const renamed: RenamedTool[] = [];
  tools.forEach((entry, k) => {
    const base = plain[k]!;
    const reason = base.length > MAX_NAME ? 'too long' : uses.get(base)! > 1 || taken.has(base) ? 'collision' : null;
    const name = reason ? `${base.slice(0, MAX_NAME - HASH_CHARS - 1)}_${shortHash(entry)}` : base;
    names.set(toolKey(entry), name);
    if (reason) renamed.push({ ...entry, name, reason });
  });
  return { names, renamed };
}

/** The key of a tool in {@link nameServerTools}' map. */
export function toolKey(entry: ServerTool): string {
  return `${entry.server}\u0000${entry.tool}`;
}

function sanitize(part: string): string {
  return part.replace(/[^a-zA-Z0-9_-]/g, '_') || '_';
}

function shortHash(entry: ServerTool): string {
  return createHash('sha256').update(toolKey(entry)).digest('hex').slice(0, HASH_CHARS);
}
