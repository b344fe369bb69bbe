/**
 * One streamed chat completion (`stream: true`, `stream_options.include_usage`): reads the SSE
 * chunks, hands appended text to `onDelta` as it arrives, and assembles the same answer the
 * non-streamed call returns (content, tool calls with their arguments concatenated,
 * usage, finish reason). An endpoint that answers the streamed request with a plain JSON body is
 * read as a non-streamed answer (the caller then stops asking it to stream).
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, type OpenAI } from 'openai';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { Stream } from 'openai/streaming';
import { toWellFormedText } from '../core/text.js';
import { LlmError } from '../errors.js';
import { toCompletionResult, type CompletionResult } from './answer.js';

/** What {@link streamCompletion} needs besides the request body. */
export interface StreamCallOptions {
  /** Model name, for error messages. */
  model: string;
  /** The caller's abort signal (`/stop`). */
  signal?: AbortSignal;
  /** Longest wait for the next chunk, in ms: a stream that stalls this long fails as a timeout. */
  idleTimeoutMs: number;
  /** Appended assistant text, well-formed (a surrogate pair split across chunks is held back until whole). */
  onDelta?: (text: string) => void;
}

/** The outcome of one streamed attempt: `plain` when the endpoint answered with a JSON body instead of SSE. */
export type StreamOutcome = { kind: 'streamed' | 'plain'; result: CompletionResult };

type ToolCallParts = { id: string; name: string; arguments: string };
/** The tool calls of a streamed answer as they are assembled (see `addToolCallPart`). */
type ToolCallAssembly = { list: ToolCallParts[]; byIndex: Map<number, ToolCallParts>; last?: ToolCallParts };

/**
 * Runs one streamed attempt. `@throws` LlmError: `aborted` when the signal fired, `connection` on
 * a stall or a stream that broke off, `transient` on a malformed chunk, an error event or a stream
 * that ended before its answer was complete; the SDK's HTTP errors as they come (the caller converts them).
 */
export async function streamCompletion(sdk: OpenAI, body: Omit<ChatCompletionCreateParamsStreaming, 'stream'>, options: StreamCallOptions): Promise<StreamOutcome> {
  const controller = new AbortController();
  const abort = (): void => controller.abort();
  options.signal?.addEventListener('abort', abort, { once: true });
  const idle = createIdleTimer(options.idleTimeoutMs, abort);
  try {
    const streamed: ChatCompletionCreateParamsStreaming = { ...body, stream: true, stream_options: { include_usage: true } };
    const response = await sdk.chat.completions.create(streamed, { signal: controller.signal }).asResponse();
    idle.touch();
    if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) return { kind: 'plain', result: await readPlain(response, options.model) };
    return { kind: 'streamed', result: await readStream(Stream.fromSSEResponse<ChatCompletionChunk>(response, controller, sdk), options, idle) };
  } catch (err) {
    throw interrupted(err, options, idle.fired);
  } finally {
    idle.stop();
    options.signal?.removeEventListener('abort', abort);
  }
}

async function readStream(stream: Stream<ChatCompletionChunk>, options: StreamCallOptions, idle: IdleTimer): Promise<CompletionResult> {
  const text = createDeltaText(options.onDelta);
  const calls: ToolCallAssembly = { list: [], byIndex: new Map() };
  let finishReason: string | null = null;
  let usage: ChatCompletion['usage'];
  for await (const chunk of stream) {
    idle.touch();
    if (!chunk || typeof chunk !== 'object') throw malformed(options.model, 'a chunk is not an object');
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices !== undefined && !Array.isArray(chunk.choices)) throw malformed(options.model, '`choices` is not a list');
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    if (typeof choice.delta?.content === 'string') text.append(choice.delta.content);
    for (const part of choice.delta?.tool_calls ?? []) addToolCallPart(calls, part, options.model);
    if (choice.finish_reason) finishReason = choice.finish_reason;
  }
  // The SDK ends the iteration quietly when its controller aborts: say why it ended.
  if (options.signal?.aborted) throw new LlmError(`chat completion with ${options.model} aborted`, { kind: 'aborted' });
  if (idle.fired) throw stalled(options);
  if (finishReason === null) throw new LlmError(`chat completion with ${options.model}: the stream ended before the answer was complete`, { kind: 'transient' });
  text.flush();
  const message: ChatCompletion.Choice['message'] = { role: 'assistant', content: text.full(), refusal: null };
  // In the order they began, whatever their indices (some gateways number them from 1: text is block 0).
  const assembled = calls.list;
  if (assembled.length > 0) message.tool_calls = assembled.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  if (message.content === '' && assembled.length > 0) message.content = null;
  return toCompletionResult(message, usage, finishReason, options.model);
}

/** A JSON answer to a streamed request: the endpoint cannot stream. */
async function readPlain(response: Response, model: string): Promise<CompletionResult> {
  let completion: ChatCompletion;
  try {
    completion = JSON.parse(await response.text()) as ChatCompletion;
  } catch (err) {
    throw new LlmError(`chat completion with ${model} returned malformed JSON (${err instanceof Error ? err.message : String(err)})`, { kind: 'transient', cause: err });
  }
  const choice = Array.isArray(completion?.choices) ? completion.choices[0] : undefined;
  if (!choice?.message) throw new LlmError(`chat completion with ${model} returned no choices`, { kind: 'transient' });
  return toCompletionResult(choice.message, completion.usage, choice.finish_reason ?? null, model);
}

/**
 * Adds one tool-call delta. A delta continues the call last begun at its index, unless it brings
 * another id: some servers send every call whole at index 0, or with no index at all (then it
 * continues the last call touched). Calls are kept in the order they began.
 */
function addToolCallPart(calls: ToolCallAssembly, part: ChatCompletionChunk.Choice.Delta.ToolCall, model: string): void {
  if (!part || typeof part !== 'object') throw malformed(model, 'a tool call delta is not an object');
  const index = (part as { index?: unknown }).index;
  if (index !== undefined && (!Number.isInteger(index) || (index as number) < 0 || (index as number) > 127)) throw malformed(model, 'a tool call delta has no valid `index`');
  const current = index === undefined ? calls.last : calls.byIndex.get(index as number);
  const call = current && !(part.id && current.id && part.id !== current.id) ? current : { id: '', name: '', arguments: '' };
  if (call !== current) calls.list.push(call);
  if (index !== undefined) calls.byIndex.set(index as number, call);
  calls.last = call;
  if (part.id) call.id = part.id;
  if (part.function?.name) call.name = part.function.name;
  if (typeof part.function?.arguments === 'string') call.arguments += part.function.arguments;
}

/** The text so far, and the deltas handed on well-formed: a high surrogate at a chunk's end waits for its pair. */
function createDeltaText(onDelta?: (text: string) => void) {
  let full = '';
  let held = '';
  const emit = (text: string): void => {
    if (text && onDelta) onDelta(text);
  };
  return {
    append(piece: string): void {
      full += piece;
      let out = held + piece;
      held = '';
      const last = out.charCodeAt(out.length - 1);
      if (last >= 0xd800 && last <= 0xdbff) {
        held = out.slice(-1);
        out = out.slice(0, -1);
      }
      emit(toWellFormedText(out));
    },
    flush(): void {
      emit(toWellFormedText(held));
      held = '';
    },
    full: () => full,
  };
}

interface IdleTimer {
  touch(): void;
  stop(): void;
  readonly fired: boolean;
}

function createIdleTimer(ms: number, onIdle: () => void): IdleTimer {
  let fired = false;
  let timer: NodeJS.Timeout | undefined;
  // Armed by the first touch (the response's headers): until then the SDK's own timeout applies.
  // Each chunk refreshes the one timer: a new timer per chunk was a visible share of a call's CPU.
  const arm = (): void => {
    if (timer) {
      timer.refresh();
      return;
    }
    timer = setTimeout(() => {
      fired = true;
      onIdle();
    }, ms);
  };
  return {
    touch: arm,
    stop: () => {
      clearTimeout(timer);
      timer = undefined;
    },
    get fired() {
      return fired;
    },
  };
}

/** A failure while reading, said as what happened to the stream. HTTP and connection errors pass through (the caller converts them). */
function interrupted(err: unknown, options: StreamCallOptions, idleFired: boolean): unknown {
  if (err instanceof LlmError) return err;
  if (options.signal?.aborted) return new LlmError(`chat completion with ${options.model} aborted`, { kind: 'aborted', cause: err });
  if (idleFired) return stalled(options);
  if (err instanceof SyntaxError) return malformed(options.model, err.message);
  if (err instanceof APIConnectionError || (err instanceof APIError && typeof err.status === 'number')) return err;
  // An `error` object inside the stream (the provider failed mid-answer): worth asking again.
  if (err instanceof APIError) return new LlmError(`chat completion with ${options.model} sent an error in its stream (${err.message})`, { kind: 'transient', cause: err });
  const detail = err instanceof Error ? err.message : String(err);
  return new LlmError(`chat completion with ${options.model}: the stream broke off (${detail})`, { kind: 'connection', cause: err });
}

function stalled(options: StreamCallOptions): LlmError {
  const message = `chat completion with ${options.model} timed out: the stream sent nothing for ${options.idleTimeoutMs / 1000} s`;
  // A timeout like the SDK's own (isTimeout): the user is told the model did not answer in time.
  return new LlmError(message, { kind: 'connection', cause: new APIConnectionTimeoutError({ message }) });
}

function malformed(model: string, detail: string): LlmError {
  return new LlmError(`chat completion with ${model} sent a malformed stream chunk (${detail})`, { kind: 'transient' });
}
