import { DEFAULT_ATTACHMENT_TTL_SECONDS } from '../src/core/attachments.js';
import type { OutboundMessage } from '../src/core/inbound.js';
import { toReplayable, type ToolCall } from '../src/core/messages.js';
import type { CompletionResult } from '../src/llm/answer.js';
import { toEntry, type StoredEntry } from '../src/redis/session-store.js';
import type { RecordedRound } from '../src/redis/step-log.js';
import { searchTranscript } from '../src/redis/transcript.js';
import { callUsageDelta, unreportedCallDelta, type UsageDelta } from '../src/redis/usage.js';
import { TURN_NOTICES } from './notices.js';
import { toolResultCap } from './model-request.js';
import type { Gate } from './approval-gate.js';
import { storeToolImages, toolImagesMessage, type CallImages } from './tool-images.js';
import { runToolCall, type ToolRound } from './tool-round.js';
import type { ToolContext } from './tools/types.js';
import { finish } from './turn-commit.js';
import { channelOf, ensureLease, messageEvent, metricsOf, notesOf, type Loop } from './turn-loop.js';
import { gateOf, park } from './turn-park.js';

/**
 * Commits one answered call: a final answer ends the turn ({@link finish}); a round of tool calls
 * passes the approval gate (or parks the turn), runs its calls and is committed with their results,
 * then the images they returned in one user message (workers/tool-images.ts).
 * @returns the replies when the turn is over, else null.
 */
export async function applyResult(loop: Loop, result: CompletionResult, overhead: number, recorded: RecordedRound | null): Promise<OutboundMessage[] | null> {
  const { deps, options, turn } = loop;
  const usage: UsageDelta = result.usage
    ? callUsageDelta(result.model, result.usage, options.contextWindow, options.prices)
    : unreportedCallDelta(result.model, options.prices);
  // A resumed round's call was counted by the run that made it.
  if (!recorded) {
    metricsOf(loop).record({
      type: 'model_call', channel: channelOf(loop), outcome: 'ok', promptTokens: result.usage?.promptTokens, completionTokens: result.usage?.completionTokens,
      cachedTokens: result.usage?.cachedTokens, costUsd: (usage.incr.costMicroUsd ?? 0) / 1e6,
    });
  }
  const meta = { lastPromptTokens: result.usage?.promptTokens ?? 0, appendedTokensSince: 0, overheadTokens: overhead };
  // The history gets the calls in a form the provider takes back; they run as the model sent them.
  const assistant = toEntry(toReplayable(result.message), deps.compressor.tokenCounter, deps.llm.model);
  const calls = result.message.tool_calls ?? [];
  if (calls.length === 0) {
    const text = (result.message.content ?? '').trim();
    return finish(loop, { entry: assistant, usage, meta, promptTokens: result.usage?.promptTokens }, text === '' ? TURN_NOTICES.empty : null, text);
  }
  const gate = await gateOf(loop, calls, recorded);
  if (gate.waiting.length > 0) return park(loop, gate.waiting);
  const entries = [assistant, ...(await runRound(loop, toolRound(loop, calls.length, recorded, gate), calls))];
  const promptTokens = result.usage?.promptTokens;
  await turn.append(entries, { transcript: entries.map((entry, k) => messageEvent(entry, undefined, k === 0 ? promptTokens : undefined)), usage, meta });
  await loop.steps.recordCommitted();
  return null;
}

/** The round's tool messages, in the order of the calls, then the message showing their images (if any returned one). */
async function runRound(loop: Loop, round: ToolRound, calls: readonly ToolCall[]): Promise<StoredEntry[]> {
  const { tokenCounter } = loop.deps.compressor;
  const entries: StoredEntry[] = [];
  const images: CallImages[] = [];
  for (const call of calls) {
    const outcome = await runToolCall(round, call);
    entries.push(toEntry({ role: 'tool', tool_call_id: call.id, content: outcome.text }, tokenCounter, loop.deps.llm.model));
    images.push({ tool: call.function.name, callId: call.id, images: outcome.images });
  }
  const shown = toolImagesMessage(images);
  if (shown) entries.push(toEntry(shown, tokenCounter, loop.deps.llm.model));
  return entries;
}

function toolRound(loop: Loop, calls: number, recorded: RecordedRound | null, gate: Gate): ToolRound {
  const { deps, options } = loop;
  const storeImages: ToolRound['storeImages'] = (callId, images) =>
    storeToolImages(deps.redis, loop.turn.sessionId, loop.turnId, callId, images, { keyPrefix: deps.store.keyPrefix, ttlSeconds: options.attachmentTtlSeconds ?? DEFAULT_ATTACHMENT_TTL_SECONDS });
  return {
    tools: deps.tools, steps: loop.steps, log: loop.log, recorded, model: deps.llm.model, gate, tokenCounter: deps.compressor.tokenCounter,
    maxTokens: toolResultCap(options.contextWindow, calls),
    context: (callId) => toolContext(loop, callId), beforeRun: (call) => ensureLease(loop, `tool ${call.function.name}`), signal: loop.signal,
    // Image parts reach the model only through the attachment reader, which inlines them.
    ...(deps.attachments ? { storeImages } : {}),
  };
}

function toolContext(loop: Loop, callId: string): Omit<ToolContext, 'signal'> {
  const keys = loop.deps.store.keys(loop.turn.sessionId);
  return {
    sessionId: loop.turn.sessionId,
    callId,
    idempotencyKey: `${loop.turn.sessionId}:${loop.turnId}:${callId}`,
    notes: notesOf(loop),
    searchTranscript: (query, limit) => searchTranscript(loop.deps.redis, keys, query, { limit }),
    requestCompaction: (focus) => { loop.manual = { focus }; },
    now: () => new Date(),
  };
}
