import { describe, expect, it } from 'vitest';
import { readServerSentEvents, type ServerSentEvent } from '../../src/llm/sse.js';

async function eventsOf(chunks: Array<string | Uint8Array>): Promise<ServerSentEvent[]> {
  async function* body(): AsyncGenerator<Uint8Array> {
    for (const chunk of chunks) yield typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk;
  }
  const out: ServerSentEvent[] = [];
  for await (const event of readServerSentEvents(body())) out.push(event);
  return out;
}

describe('readServerSentEvents', () => {
  it.each([
    ['one event a chunk', ['data: {"a":1}\n\n', 'data: [DONE]\n\n'], [{ event: '', data: '{"a":1}' }, { event: '', data: '[DONE]' }]],
    ['CRLF and CR line ends', ['data: a\r\n\r\ndata: b\r\rdata: c\n\n'], [{ event: '', data: 'a' }, { event: '', data: 'b' }, { event: '', data: 'c' }]],
    ['a CRLF split across chunks is one line end', ['data: a\r', '\n\r', '\ndata: b\n\n'], [{ event: '', data: 'a' }, { event: '', data: 'b' }]],
    ['lines split anywhere', ['da', 'ta: x', 'y\n', '\n'], [{ event: '', data: 'xy' }]],
    ['multi-line data joins with \\n; comments and other fields are skipped', [': ping\nid: 7\ndata: one\ndata:two\ndata\nretry: 5\n\n'], [{ event: '', data: 'one\ntwo\n' }]],
    ['the event field', ['event: error\ndata: {"message":"overloaded"}\n\n'], [{ event: 'error', data: '{"message":"overloaded"}' }]],
    ['an event cut off by the end is dropped', ['data: a\n\ndata: b\n'], [{ event: '', data: 'a' }]],
  ])('%s', async (_name, chunks, expected) => {
    expect(await eventsOf(chunks)).toEqual(expected);
  });

  it('decodes a character whose bytes are split across chunks', async () => {
    const bytes = new TextEncoder().encode('data: 🚚é\n\n');
    expect(await eventsOf([bytes.slice(0, 8), bytes.slice(8, 11), bytes.slice(11)])).toEqual([{ event: '', data: '🚚é' }]);
  });
});
