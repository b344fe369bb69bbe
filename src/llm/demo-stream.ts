/** The demo model's streamed answers: a chat completion sent as SSE chunks, a word at a time, as real endpoints stream. */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

interface Completion {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: Array<{ index: number; message: { content: string | null; tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }> }; finish_reason: string }>;
  usage: unknown;
}

/** Sends `completion` (a non-streamed answer) as a stream: text pieces, tool calls, the finish, usage when asked for, `[DONE]`. */
export async function sendCompletionStream(res: ServerResponse, completion: Completion, includeUsage: boolean, wordDelayMs: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const base = { id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: completion.model };
  const send = (choices: unknown[], extra: object = {}): void => void res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
  const choice = completion.choices[0]!;
  send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  for (const word of (choice.message.content ?? '').match(/\S*\s*/g) ?? []) {
    if (word === '' || res.destroyed) continue;
    send([{ index: 0, delta: { content: word }, finish_reason: null }]);
    if (wordDelayMs > 0) await sleep(wordDelayMs);
  }
  for (const [index, call] of (choice.message.tool_calls ?? []).entries()) {
    send([{ index: 0, delta: { tool_calls: [{ index, id: call.id, type: call.type, function: call.function }] }, finish_reason: null }]);
  }
  send([{ index: 0, delta: {}, finish_reason: choice.finish_reason }]);
  if (includeUsage) send([], { usage: completion.usage });
  res.end('data: [DONE]\n\n');
}
