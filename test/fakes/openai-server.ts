/**
 * A fake OpenAI-compatible chat-completions server on port 0, scripted per test: text answers,
 * tool calls, usage (counted with our tokenizer over messages + tool schemas), HTTP errors with
 * headers (429/500), context-length errors, malformed bodies, answers without choices and held requests (answered when the test says so, or
 * never: the client may be killed while it waits). `/audio/transcriptions` takes a multipart upload
 * (`file`, `model`; 400 without them, as OpenAI) and answers `{ text }` from `transcribe`. An
 * `image_url` part that is neither an http(s) URL nor a base64 image `data:` URL is refused with 400, and so is
 * a tool description over 1,024 characters (`string_above_max_length`), a tool whose parameters hold an
 * array schema without `items` (`invalid_function_parameters`), and a
 * history holding a tool call whose name breaks the pattern (`invalid_value`).
 * A request with `stream: true` is answered as the
 * real API does: SSE chunks (text in pieces, tool calls by index with their arguments in pieces, a
 * final usage chunk when `stream_options.include_usage`, then `[DONE]`) — unless the fake is told it
 * cannot stream (`streaming: 'json'` answers a plain body anyway, `'refuse'` answers 400 naming
 * `stream_options`, as some OpenAI-compatible servers do).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatMessage } from '../../src/core/messages.js';
import { countMessageTokens, countTextTokens } from '../../src/llm/encodings.js';
import { readRequestBody } from '../../src/llm/demo-model.js';

/** A request the fake received. */
export interface FakeRequest {
  index: number;
  model: string;
  messages: ChatMessage[];
  tools: unknown[];
  /** Prompt tokens as the fake counts (and reports) them: messages + tool schemas. */
  promptTokens: number;
  /** Whether the request asked for a stream. */
  stream: boolean;
}

/** How the fake answers streamed requests. */
export type FakeStreaming = 'sse' | 'json' | 'refuse';

/** How a streamed answer is paced and broken: pieces of text, a delay between chunks, a cut. */
export interface FakeStreamShape {
  /** The text's pieces, one per chunk (they must join to `content`). Default: pieces of about 4 characters. */
  pieces?: string[];
  /** Wait between chunks, ms. Default 0: the next chunk follows on the next turn of the event loop (no 1 ms timer per chunk). */
  pieceDelayMs?: number;
  /** Close the connection after this many content chunks (a stream that dies mid-way). */
  cutAfter?: number;
}

/** What the fake answers. */
export type FakeReply =
  | ({ content: string; usage?: { prompt_tokens?: number; completion_tokens?: number; cached_tokens?: number } | null } & FakeStreamShape)
  | ({ toolCalls: Array<{ name: string; arguments: string | object; id?: string }>; content?: string } & FakeStreamShape)
  /** Streamed requests only: these SSE `data:` payloads as they are (malformed chunks, an error event). */
  | { sse: string[] }
  | { status: number; message?: string; code?: string; headers?: Record<string, string> }
  | { contextLength: true }
  /** A body sent as it is (malformed JSON, say), with `status` (default 200). */
  | { raw: string; status?: number }
  /** A 200 answer whose `choices` is empty. */
  | { noChoices: true }
  | { hold: Promise<FakeReply> };

/** Answers one request. */
export type FakeHandler = (request: FakeRequest) => FakeReply | Promise<FakeReply>;

/** A running fake. */
export interface FakeOpenAI {
  /** Base URL for the openai SDK (ends in `/v1`). */
  baseURL: string;
  requests: FakeRequest[];
  setHandler(handler: FakeHandler): void;
  /** How streamed requests are answered from now on. Default `sse`. */
  setStreaming(mode: FakeStreaming): void;
  /** Resolves with the next request for which `predicate` holds (already received ones count). */
  waitForRequest(predicate: (request: FakeRequest) => boolean): Promise<FakeRequest>;
  /** Transcription requests received. */
  transcriptions: FakeTranscription[];
  /** What `/audio/transcriptions` answers. Default: `transcript of <file name>`. */
  setTranscriber(transcribe: (request: FakeTranscription) => FakeTranscriptionReply): void;
  close(): Promise<void>;
}

/** One `/audio/transcriptions` request. */
export interface FakeTranscription {
  model: string;
  fileName: string;
  mimeType: string;
  bytes: Buffer;
}

/** A transcript, or an HTTP error. */
/** `seconds`: the audio's duration, reported as `usage: { type: 'duration', seconds }` as OpenAI does for whisper-1. */
export type FakeTranscriptionReply = { text: string; seconds?: number } | { status: number; message?: string };

/** Starts the fake. Default handler: answers `ok`. */
export async function startFakeOpenAI(handler: FakeHandler = () => ({ content: 'ok' })): Promise<FakeOpenAI> {
  let current = handler;
  let streaming: FakeStreaming = 'sse';
  const requests: FakeRequest[] = [];
  const waiters: Array<{ predicate: (r: FakeRequest) => boolean; resolve: (r: FakeRequest) => void }> = [];
  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(err) } });
    });
  });
  const transcriptions: FakeTranscription[] = [];
  let transcriber = (request: FakeTranscription): FakeTranscriptionReply => ({ text: `transcript of ${request.fileName}` });
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if ((req.url ?? '').startsWith('/v1/audio/transcriptions')) return transcribe(req, res, transcriptions, transcriber);
    const body = JSON.parse(await readRequestBody(req)) as { model: string; messages: ChatMessage[]; tools?: unknown[]; stream?: boolean; stream_options?: { include_usage?: boolean } };
    const tools = body.tools ?? [];
    const promptTokens = countMessageTokens(body.messages) + (tools.length > 0 ? countTextTokens(JSON.stringify(tools)) : 0);
    const request: FakeRequest = { index: requests.length, model: body.model, messages: body.messages, tools, promptTokens, stream: body.stream === true };
    requests.push(request);
    for (const waiter of waiters.splice(0)) {
      if (waiter.predicate(request)) waiter.resolve(request);
      else waiters.push(waiter);
    }
    const badName = badToolCallName(body.messages);
    if (badName) return sendJson(res, 400, { error: { message: `Invalid '${badName}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`, type: 'invalid_request_error', param: badName, code: 'invalid_value' } });
    const long = tools.findIndex((tool) => ((tool as { function?: { description?: string } }).function?.description ?? '').length > 1024);
    if (long >= 0) return sendJson(res, 400, { error: { message: `Invalid 'tools[${long}].function.description': string too long. Expected a string with maximum length 1024.`, type: 'invalid_request_error', param: `tools[${long}].function.description`, code: 'string_above_max_length' } });
    const badSchema = arrayWithoutItems(tools);
    if (badSchema) return sendJson(res, 400, { error: { message: `Invalid schema for function '${badSchema.name}': In context=(${badSchema.path}), array schema missing items.`, type: 'invalid_request_error', param: `tools[${badSchema.index}].function.parameters`, code: 'invalid_function_parameters' } });
    const badImage = invalidImageUrl(body.messages);
    if (badImage) return sendJson(res, 400, { error: { message: `Invalid image URL: ${badImage.slice(0, 60)}. Expected a base64-encoded data URL with an image MIME type or an https URL.`, type: 'invalid_request_error', param: 'messages', code: 'invalid_image_url' } });
    if (request.stream && streaming === 'refuse') {
      sendJson(res, 400, { error: { message: 'Unrecognized request argument supplied: stream_options', type: 'invalid_request_error', code: null } });
      return;
    }
    let reply = await current(request);
    while ('hold' in reply) reply = await reply.hold;
    if (res.destroyed) return;
    if (request.stream && streaming === 'sse' && ('content' in reply || 'toolCalls' in reply || 'sse' in reply)) await streamReply(res, request, reply, body.stream_options?.include_usage === true);
    else respond(res, request, reply);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    transcriptions,
    setTranscriber(next) { transcriber = next; },
    setHandler(next) { current = next; },
    setStreaming(mode) { streaming = mode; },
    waitForRequest(predicate) {
      const found = requests.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

function respond(res: ServerResponse, request: FakeRequest, reply: Exclude<FakeReply, { hold: unknown }>): void {
  if ('sse' in reply) {
    sendJson(res, 500, { error: { message: 'fake: an `sse` reply needs a streamed request', type: 'server_error', code: null } });
    return;
  }
  if ('contextLength' in reply) {
    sendJson(res, 400, { error: { message: `This model's maximum context length is 16000 tokens. However, your messages resulted in ${request.promptTokens} tokens.`, type: 'invalid_request_error', code: 'context_length_exceeded', param: 'messages' } });
    return;
  }
  if ('raw' in reply) {
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
    res.end(reply.raw);
    return;
  }
  if ('noChoices' in reply) {
    sendJson(res, 200, { id: `chatcmpl-${request.index}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: request.model, choices: [] });
    return;
  }
  if ('status' in reply) {
    sendJson(res, reply.status, { error: { message: reply.message ?? `fake error ${reply.status}`, type: 'server_error', code: reply.code ?? null } }, reply.headers);
    return;
  }
  const message = 'toolCalls' in reply
    ? { role: 'assistant', content: reply.content ?? null, tool_calls: toolCallsOf(request, reply) }
    : { role: 'assistant', content: reply.content };
  const usage = usageOf(request, reply);
  sendJson(res, 200, {
    id: `chatcmpl-${request.index}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: request.model,
    choices: [{ index: 0, message, finish_reason: 'toolCalls' in reply ? 'tool_calls' : 'stop' }],
    ...(usage ? { usage } : {}),
  });
}

/** Like OpenAI, the name of every tool call in the history must match its pattern: the param of the first that does not. */
function badToolCallName(messages: ChatMessage[]): string | undefined {
  for (const [m, message] of messages.entries()) {
    if (message.role !== 'assistant') continue;
    for (const [k, call] of (message.tool_calls ?? []).entries()) if (!/^[a-zA-Z0-9_-]+$/.test(call.function.name)) return `messages[${m}].tool_calls[${k}].function.name`;
  }
  return undefined;
}

/** Like OpenAI, every array in a tool's parameters must say what its items are: the first tool that breaks the rule, and where. */
function arrayWithoutItems(tools: unknown[]): { index: number; name: string; path: string } | undefined {
  const find = (node: unknown, path: string[]): string[] | undefined => {
    if (node === null || typeof node !== 'object') return undefined;
    if (Array.isArray(node)) {
      for (const [k, child] of node.entries()) {
        const found = find(child, [...path, String(k)]);
        if (found) return found;
      }
      return undefined;
    }
    const schema = node as Record<string, unknown>;
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (types.includes('array') && !('items' in schema) && !('prefixItems' in schema)) return path;
    for (const [key, child] of Object.entries(schema)) {
      if (['const', 'enum', 'default', 'examples'].includes(key)) continue;
      const found = find(child, [...path, key]);
      if (found) return found;
    }
    return undefined;
  };
  for (const [index, tool] of tools.entries()) {
    const fn = (tool as { function?: { name?: string; parameters?: unknown } }).function;
    const path = find(fn?.parameters, []);
    if (path) return { index, name: fn?.name ?? '', path: path.map((part) => `'${part}'`).join(', ') };
  }
  return undefined;
}

/** Like OpenAI, an image part must be an http(s) URL or a base64 `data:` URL of an image type it reads. */
function invalidImageUrl(messages: ChatMessage[]): string | undefined {
  for (const message of messages) {
    if (message.role !== 'user' || typeof message.content === 'string') continue;
    for (const part of message.content) {
      if (part.type !== 'image_url') continue;
      const url = part.image_url.url;
      if (!/^https?:\/\//.test(url) && !/^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+=*$/.test(url)) return url;
    }
  }
  return undefined;
}

async function transcribe(req: IncomingMessage, res: ServerResponse, log: FakeTranscription[], answer: (request: FakeTranscription) => FakeTranscriptionReply): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const type = req.headers['content-type'] ?? '';
  if (!type.startsWith('multipart/form-data')) return sendJson(res, 400, { error: { message: 'Expected multipart/form-data', type: 'invalid_request_error' } });
  const form = await new Response(Buffer.concat(chunks), { headers: { 'content-type': type } }).formData();
  const file = form.get('file');
  const model = form.get('model');
  if (typeof model !== 'string' || model === '') return sendJson(res, 400, { error: { message: 'you must provide a model parameter', type: 'invalid_request_error' } });
  if (!file || typeof file === 'string') return sendJson(res, 400, { error: { message: "'file' is a required property", type: 'invalid_request_error' } });
  const request: FakeTranscription = { model, fileName: file.name, mimeType: file.type, bytes: Buffer.from(await file.arrayBuffer()) };
  log.push(request);
  const reply = answer(request);
  if ('status' in reply) return sendJson(res, reply.status, { error: { message: reply.message ?? `fake error ${reply.status}`, type: 'server_error' } });
  sendJson(res, 200, { text: reply.text, ...(reply.seconds !== undefined ? { usage: { type: 'duration', seconds: reply.seconds } } : {}) });
}

type AnswerReply = Extract<FakeReply, { content: string } | { toolCalls: unknown }>;

function toolCallsOf(request: FakeRequest, reply: Extract<FakeReply, { toolCalls: unknown }>) {
  return reply.toolCalls.map((call, k) => ({ id: call.id ?? `call_${request.index}_${k}`, type: 'function', function: { name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments) } }));
}

function usageOf(request: FakeRequest, reply: AnswerReply) {
  const completion = 'content' in reply && typeof reply.content === 'string' ? countTextTokens(reply.content) : 20;
  const usageOverride = 'usage' in reply ? reply.usage : undefined;
  return usageOverride === null ? undefined : {
    prompt_tokens: usageOverride?.prompt_tokens ?? request.promptTokens,
    completion_tokens: usageOverride?.completion_tokens ?? completion,
    total_tokens: (usageOverride?.prompt_tokens ?? request.promptTokens) + completion,
    prompt_tokens_details: { cached_tokens: usageOverride?.cached_tokens ?? 0 },
  };
}

/** A streamed answer, chunk by chunk, as the real API sends it. */
async function streamReply(res: ServerResponse, request: FakeRequest, reply: AnswerReply | { sse: string[] }, includeUsage: boolean): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  if ('sse' in reply) {
    for (const data of reply.sse) res.write(`data: ${data}\n\n`);
    res.end();
    return;
  }
  const base = { id: `chatcmpl-${request.index}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: request.model };
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): void => void res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
  const delayMs = reply.pieceDelayMs ?? 0;
  // setTimeout(0) waits at least 1 ms: a 5,000-character answer in 4-character pieces would take over a second.
  const pause = (): Promise<void> => new Promise((resolve) => (delayMs > 0 ? setTimeout(resolve, delayMs) : setImmediate(resolve)));
  chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  const text = reply.content ?? '';
  const pieces = reply.pieces ?? (text.match(/[\s\S]{1,4}/gu) ?? []);
  for (const [k, piece] of pieces.entries()) {
    if (reply.cutAfter !== undefined && k >= reply.cutAfter) return void res.destroy();
    await pause();
    if (res.destroyed) return;
    chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]);
  }
  if ('toolCalls' in reply) {
    for (const [index, call] of toolCallsOf(request, reply).entries()) {
      const args = call.function.arguments;
      const half = Math.ceil(args.length / 2);
      chunk([{ index: 0, delta: { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: args.slice(0, half) } }] }, finish_reason: null }]);
      await pause();
      chunk([{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(half) } }] }, finish_reason: null }]);
    }
  }
  chunk([{ index: 0, delta: {}, finish_reason: 'toolCalls' in reply ? 'tool_calls' : 'stop' }]);
  const usage = usageOf(request, reply);
  if (includeUsage && usage) chunk([], { usage });
  res.end('data: [DONE]\n\n');
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

