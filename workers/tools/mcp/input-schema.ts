/** Schema keywords whose values are data, not schemas: never rewritten. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);

/**
 * An MCP tool's `inputSchema` as offered to the model: unchanged, but every array schema that says
 * nothing of its items (no `items`, no `prefixItems`) gets `items: {}` (any item). Such schemas are
 * valid JSON Schema and common in MCP servers, but OpenAI refuses a request holding one
 * (`invalid_function_parameters`), which would fail every turn of every chat.
 */
export function toOfferedSchema(schema: Record<string, unknown>): Record<string, unknown> {
  return withArrayItems(schema) as Record<string, unknown>;
}

function withArrayItems(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withArrayItems);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) out[key] = DATA_KEYWORDS.has(key) ? value : withArrayItems(value);
  const types: unknown[] = Array.isArray(out.type) ? out.type : [out.type];
  if (types.includes('array') && !('items' in out) && !('prefixItems' in out)) out.items = {};
  return out;
}
