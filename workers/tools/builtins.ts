import { z } from 'zod';
import { excerptAround } from '../../src/core/text.js';
import { entryText } from '../../src/redis/transcript.js';
import { evaluateExpression } from './calculator-parser.js';
import { defineTool, type ToolDefinition } from './types.js';

const SEARCH_EXCERPT_CHARS = 400;

/** `current_time`: the current date and time, optionally in an IANA time zone. */
export const currentTimeTool = defineTool({
  name: 'current_time',
  description: 'Returns the current date and time (ISO 8601 UTC and, if given, in an IANA time zone such as Europe/Berlin).',
  schema: z.object({ timezone: z.string().max(64).optional().describe('IANA time zone, e.g. America/New_York') }),
  run({ timezone }, context) {
    const now = context.now();
    if (!timezone) return { utc: now.toISOString() };
    const local = new Intl.DateTimeFormat('en-CA', { timeZone: timezone, dateStyle: 'full', timeStyle: 'long' }).format(now);
    return { utc: now.toISOString(), timezone, local };
  },
});

/** `calculator`: evaluates an arithmetic expression with a safe parser. */
export const calculatorTool = defineTool({
  name: 'calculator',
  description: 'Evaluates an arithmetic expression: + - * / % ^, parentheses, pi, e, sqrt, abs, round, floor, ceil, sin, cos, tan, ln, log, exp, min, max, pow.',
  schema: z.object({ expression: z.string().min(1).max(500) }),
  run({ expression }) {
    return { expression, result: evaluateExpression(expression) };
  },
});

/** `remember`: stores a note that is shown in every request and survives every compaction. */
export const rememberTool = defineTool({
  name: 'remember',
  description: 'Stores a short note about this conversation that stays visible to you for good (it survives summaries). Use a short key; the same key overwrites.',
  schema: z.object({ key: z.string().min(1).max(64), note: z.string().min(1).max(2000) }),
  async run({ key, note }, context) {
    await context.notes.set(key, note);
    return `remembered "${key}"`;
  },
});

/** `forget`: removes a note. */
export const forgetTool = defineTool({
  name: 'forget',
  description: 'Removes a note stored with remember.',
  schema: z.object({ key: z.string().min(1).max(64) }),
  async run({ key }, context) {
    return (await context.notes.remove(key)) ? `forgot "${key}"` : `no note "${key}"`;
  },
});

/** `search_history`: substring search over the full transcript, including compacted turns. */
export const searchHistoryTool = defineTool({
  name: 'search_history',
  description: 'Searches the full history of this conversation (including parts that were summarised away) for a word or phrase. Returns matching messages, newest first.',
  schema: z.object({ query: z.string().min(2).max(200), limit: z.number().int().min(1).max(20).optional() }),
  async run({ query, limit }, context) {
    const hits = await context.searchTranscript(query, limit ?? 5);
    if (hits.length === 0) return `no messages contain "${query}"`;
    return hits.map((hit) => (hit.type === 'message' ? `[${hit.id}] ${hit.message.role}: ${excerptAround(entryText(hit), query, SEARCH_EXCERPT_CHARS)}` : '')).join('\n');
  },
});

/** `compact`: asks for a compaction of the conversation, optionally focused on a topic. */
export const compactTool = defineTool({
  name: 'compact',
  description: 'Summarises older parts of this conversation to free context space. Optionally give a focus to keep in detail.',
  schema: z.object({ focus: z.string().max(500).optional() }),
  run({ focus }, context) {
    context.requestCompaction(focus);
    return 'compaction scheduled before your next step';
  },
});

/** The built-in tools, in the order they are offered to the model. */
export const BUILTIN_TOOLS: readonly ToolDefinition[] = [
  currentTimeTool, calculatorTool, rememberTool, forgetTool, searchHistoryTool, compactTool,
] as ToolDefinition[];

