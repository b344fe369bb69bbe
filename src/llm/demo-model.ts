import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEMO_MODEL } from '../core/models.js';
import { messageText, type ChatMessage, type ToolCall } from '../core/messages.js';
import type { TokenCounter } from '../core/tokens.js';
import { createTokenCounter } from './encodings.js';
import { createSilentLogger, type Logger } from '../log.js';
import { SUMMARIZER_MARK, SUMMARY_SECTIONS } from './summarizer.js';
import { truncateText } from '../core/text.js';
import { sendCompletionStream } from './demo-stream.js';

/** Label on every answer of the demo model, so nobody mistakes it for a real LLM. */
export const DEMO_LABEL = '[demo model]';

/** Options of {@link startDemoModel}. */
export interface DemoModelOptions {
  /** Address to bind. Default `127.0.0.1` (the demo never listens off loopback by default). */
  host?: string;
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
  /** Model name it reports. Default `chatgate-demo`. */
  model?: string;
  logger?: Logger;
  /** Clock of the scripted `current_time` talk. Default `() => new Date()`. */
  now?: () => Date;
  /** Pause between two words of a streamed answer (summaries excepted), ms: `chatgate start --demo` shows the reply being written. Default 0. */
  wordDelayMs?: number;
}

/** A running demo model. */
export interface DemoModel {
  /** OpenAI-compatible base URL, e.g. `http://127.0.0.1:40123/v1`. */
  baseUrl: string;
  model: string;
  /** Chat completions answered so far. */
  readonly calls: number;
  close(): Promise<void>;
}

interface CompletionBody {
  model?: string;
  messages?: ChatMessage[];
  tools?: unknown[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
}

interface ScriptedReply {
  content: string | null;
  toolCalls: ToolCall[];
}

const DEFAULTS = { host: '127.0.0.1', port: 0, model: DEMO_MODEL };
const SMALL_TALK = [
  'This is the built-in offline demo of chatgate: no real LLM is answering. Every message you send is stored with its token count, and every reply of mine reports realistic usage, so the context grows turn by turn. Ask for the time, give me a sum to calculate, or say "remember that …" to see the tools at work.',
  'Keep talking to watch the context fill up on the dashboard. When a request reaches the compaction trigger (half of the usable window by default), the older turns are summarised into one structured handoff summary, identifiers are pinned verbatim, and the newest turns stay as they were.',
  'The demo window is deliberately small, so compaction happens after a handful of turns instead of hundreds. The transcript keeps every message anyway: compaction only rewrites the projection the model sees, and `npx chatgate transcript <session>` shows the full record.',
  'Try `npx chatgate sessions` and `npx chatgate usage <session>` in another terminal (in the chatgate folder): they show the same token figures as the dashboard. `npx chatgate compact <session> --focus "<topic>"` forces a compaction by hand, and `/compact` or `/reset` work right here in the chat.',
];

/**
 * Starts the built-in offline demo model: a real OpenAI-compatible chat-completions server
 * (`GET /v1/models`, `POST /v1/chat/completions`) on a loopback port, with scripted answers that
 * call the `current_time`, `calculator` and `remember` tools, answer summariser prompts with a
 * structured summary, and report `usage` counted with the real tokenizer. Every answer carries
 * {@link DEMO_LABEL}.
 */
export async function startDemoModel(options: DemoModelOptions = {}): Promise<DemoModel> {
  const o = { ...DEFAULTS, ...options };
  const log = (options.logger ?? createSilentLogger()).child({ component: 'demo-model' });
  const now = options.now ?? (() => new Date());
  const tokens = createTokenCounter([o.model]);
  let calls = 0;
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => sendJson(res, 500, { error: { message: err instanceof Error ? err.message : String(err), type: 'server_error' } }));
  });
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '').split('?')[0]!.replace(/\/+$/, '');
    if (req.method === 'GET' && (path === '/v1/models' || path === '/models')) {
      sendJson(res, 200, { object: 'list', data: [{ id: o.model, object: 'model', created: 0, owned_by: 'chatgate-demo' }] });
      return;
    }
    if (req.method !== 'POST' || !/\/chat\/completions$/.test(path)) {
      sendJson(res, 404, { error: { message: `the demo model serves GET /v1/models and POST /v1/chat/completions (got ${req.method} ${path})`, type: 'invalid_request_error' } });
      return;
    }
    const body = JSON.parse(await readRequestBody(req)) as CompletionBody;
    const messages = body.messages ?? [];
    const reply = scriptedReply(messages, body.tools ?? [], now);
    calls += 1;
    log.debug({ calls, toolCalls: reply.toolCalls.length }, 'demo completion');
    const answer = completion(tokens, body.model ?? o.model, messages, body.tools ?? [], reply, calls);
    const summary = messages.some((m) => m.role === 'system' && messageText(m).includes(SUMMARIZER_MARK));
    if (body.stream === true) await sendCompletionStream(res, answer, body.stream_options?.include_usage === true, summary ? 0 : options.wordDelayMs ?? 0);
    else sendJson(res, 200, answer);
  };
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  log.info({ port }, 'demo model listening');
  return {
    baseUrl: `http://${host}:${port}/v1`,
    model: o.model,
    get calls() { return calls; },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** The demo's answer to a conversation (exported for tests of the script). */
export function scriptedReply(messages: readonly ChatMessage[], tools: readonly unknown[], now: () => Date = () => new Date()): ScriptedReply {
  const system = messages.find((m) => m.role === 'system');
  if (system && messageText(system).startsWith(SUMMARIZER_MARK)) return { content: demoSummary(messages), toolCalls: [] };
  const last = messages[messages.length - 1];
  if (last?.role === 'tool') return { content: afterTools(messages), toolCalls: [] };
  const userTurns = messages.filter((m) => m.role === 'user').length;
  // A framing in brackets before the user's words (a /btw side question's) is not theirs: not echoed.
  const text = last ? messageText(last).trim().replace(/^\[[^\]\n]*\]\n/, '').trim() : '';
  const call = tools.length > 0 ? toolFor(text, userTurns) : null;
  if (call) return { content: `${DEMO_LABEL} Let me use the ${call.function.name} tool.`, toolCalls: [call] };
  return { content: `${DEMO_LABEL} ${smallTalk(text, userTurns, now)}`, toolCalls: [] };
}

function toolFor(text: string, turn: number): ToolCall | null {
  const id = `call_demo_${turn}_${Date.now().toString(36)}`;
  const make = (name: string, args: object): ToolCall => ({ id, type: 'function', function: { name, arguments: JSON.stringify(args) } });
  const remember = /^(?:please\s+)?remember(?:\s+that)?\s+(.+)$/i.exec(text);
  if (remember) return make('remember', { key: noteKey(remember[1]!), note: truncateText(remember[1]!, 500) });
  if (/\b(time|date|clock|today)\b/i.test(text)) return make('current_time', {});
  const expression = /(?:^|[^\w.])([-(]*\d[\d\s.+\-*/%^()]*[+\-*/%^][\d\s.+\-*/%^()]*\d\)*)/.exec(text);
  if (expression) return make('calculator', { expression: expression[1]!.trim() });
  return null;
}

function afterTools(messages: readonly ChatMessage[]): string {
  const results: string[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) results.unshift(messageText(messages[i]!));
  const said = results.map((r) => truncateText(r.trim(), 300)).join('; ');
  return `${DEMO_LABEL} The tool answered: ${said}${/[.!?…]$/.test(said) ? '' : '.'} (A real model would now phrase this nicely.)`;
}

function smallTalk(text: string, turn: number, now: () => Date): string {
  const echo = text.length > 0 ? `You said: "${truncateText(text, 200)}". ` : '';
  // Three paragraphs (~250 tokens) a turn: the small demo window reaches the trigger after a handful of turns.
  const paragraphs = [0, 1, 2].map((k) => SMALL_TALK[(turn - 1 + k) % SMALL_TALK.length]);
  return `${echo}${paragraphs.join('\n\n')}\n\n(turn ${turn}, ${now().toISOString().slice(0, 10)})`;
}

/** A structured handoff summary in the fixed sections, built from the summariser prompt; updates merge. */
function demoSummary(messages: readonly ChatMessage[]): string {
  const prompt = messages.filter((m) => m.role === 'user').map(messageText).join('\n');
  const turns = between(prompt, '<new-turns>', '</new-turns>');
  const earlier = parseSections(between(prompt, '<previous-summary>', '</previous-summary>'));
  const asks = [...turns.matchAll(/^\[user\] (.*)$/gm)].map((m) => (m[1] ?? '').trim()).filter((s) => s.length > 0);
  const tools = [...turns.matchAll(/calls\] (.*)$/gm)].map((m) => `called ${truncateText(m[1] ?? '', 120)}`);
  // Like a good summariser, it keeps what it was asked to keep (the engine's most salient facts), not every token.
  const mustKeep = /These identifiers must appear verbatim[^\n]*\n((?:- .*\n?)+)/.exec(prompt)?.[1] ?? '';
  const ids = mustKeep.split('\n').filter((line) => line.startsWith('- ')).map((line) => line.slice(2).trim());
  const focus = /^Focus especially on: (.*)$/m.exec(prompt)?.[1];
  const fresh: Record<string, string[]> = {
    Goal: [asks.length > 0 ? `Latest request: "${truncateText(asks[asks.length - 1]!, 160)}"` : (earlier.Goal?.[0] ?? 'Continue the conversation.')],
    'Constraints and preferences': focus ? [`Focus requested: ${focus}`] : [],
    'Completed actions': tools,
    'Active state': [`${asks.length} more user messages summarised${earlier.Goal ? ' (earlier summary updated)' : ''}.`],
    'Open questions': [],
    'Key decisions and why': [],
    'References (ids, paths, URLs)': ids,
    'Next steps': ['Answer the next user message.'],
    'Critical context': [`${DEMO_LABEL} This summary was written by the offline demo model.`],
  };
  const replaced = new Set(['Goal', 'Active state', 'Next steps', 'Critical context']);
  return SUMMARY_SECTIONS.map((name) => {
    const lines = replaced.has(name) ? (fresh[name] ?? []) : [...new Set([...(earlier[name] ?? []), ...(fresh[name] ?? [])])].slice(-12);
    return `## ${name}\n${lines.length === 0 ? 'none' : lines.map((l) => `- ${l}`).join('\n')}`;
  }).join('\n');
}

/** Section name → its bullet lines (without `- `), from a summary in the fixed sections. */
function parseSections(summary: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  let current = '';
  for (const line of summary.split('\n')) {
    const heading = /^## (.+)$/.exec(line.trim());
    if (heading) current = heading[1]!;
    else if (current && line.trim().startsWith('- ')) (out[current] ??= []).push(line.trim().slice(2));
  }
  return out;
}

function completion(tokens: TokenCounter, model: string, messages: readonly ChatMessage[], tools: readonly unknown[], reply: ScriptedReply, n: number): Parameters<typeof sendCompletionStream>[1] {
  const promptTokens = tokens.countMessages(messages, model) + (tools.length > 0 ? tokens.countText(JSON.stringify(tools), model) : 0);
  const completionTokens = tokens.countText(reply.content ?? '', model) + reply.toolCalls.reduce((sum, c) => sum + tokens.countText(c.function.name + c.function.arguments, model), 0);
  const message = reply.toolCalls.length > 0 ? { role: 'assistant', content: reply.content, tool_calls: reply.toolCalls } : { role: 'assistant', content: reply.content };
  return {
    id: `chatcmpl-demo-${n}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model,
    choices: [{ index: 0, message, finish_reason: reply.toolCalls.length > 0 ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens, prompt_tokens_details: { cached_tokens: 0 } },
  };
}

function noteKey(text: string): string {
  const words = text.toLowerCase().replace(/[^a-z0-9\s]/g, ' ').split(/\s+/).filter((w) => w.length > 2).slice(0, 3);
  return words.length > 0 ? words.join('-') : 'note';
}

function between(text: string, open: string, close: string): string {
  const start = text.indexOf(open);
  if (start === -1) return '';
  const end = text.indexOf(close, start);
  return text.slice(start + open.length, end === -1 ? undefined : end).trim();
}

/** The whole body of `req` as UTF-8 text (the demo model's and the test fakes' servers read requests this way). */
export function readRequestBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
