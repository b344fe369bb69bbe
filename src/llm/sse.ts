/**
 * Server-sent events read from a response body, for streamed chat completions. The SDK's own
 * reader (`Stream.fromSSEResponse`: a line decoder, an event decoder and an async generator per
 * layer) cost about as much as the rest of reading the answer; this is the same reading in one
 * pass: events end at an empty line, `data` lines join with `\n`, comments and other fields are
 * skipped, lines end at `\n`, `\r\n` or `\r`, and an event cut off by the end of the body is
 * dropped (as the SDK does).
 */

/** One event: its `event` field ('' when absent) and its data. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/** The events of `body` (bytes, e.g. a Node stream or a web `ReadableStream`), in order. */
export async function* readServerSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let pending = '';
  let data: string[] = [];
  let event = '';
  for await (const bytes of body) {
    pending += decoder.decode(bytes, { stream: true });
    let start = 0;
    for (let end = nextLineEnd(pending, start); end >= 0; end = nextLineEnd(pending, start)) {
      const line = pending.slice(start, end);
      start = end + (pending.charCodeAt(end) === CR && pending.charCodeAt(end + 1) === LF ? 2 : 1);
      if (line === '') {
        if (event !== '' || data.length > 0) yield { event, data: data.join('\n') };
        data = [];
        event = '';
      } else if (line.startsWith('data:')) data.push(fieldValue(line, 5));
      else if (line.startsWith('event:')) event = fieldValue(line, 6);
      else if (line === 'data') data.push('');
    }
    pending = pending.slice(start);
  }
}

const CR = 13;
const LF = 10;

/** Index of the next line's end at or after `from`, or -1: a `\r` last in the buffer waits (a `\n` may follow in the next chunk). */
function nextLineEnd(text: string, from: number): number {
  for (let k = from; k < text.length; k++) {
    const code = text.charCodeAt(k);
    if (code === LF) return k;
    if (code === CR) return k + 1 < text.length ? k : -1;
  }
  return -1;
}

/** A field's value: what follows the colon, less one leading space. */
function fieldValue(line: string, colonEnd: number): string {
  return line.charCodeAt(colonEnd) === 32 ? line.slice(colonEnd + 1) : line.slice(colonEnd);
}
