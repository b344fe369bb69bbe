import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';

function sink(): { stream: Writable; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream, lines: () => chunks.join('').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('createLogger', () => {
  it('redacts secrets wherever the configuration puts them', () => {
    const out = sink();
    const log = createLogger({ destination: out.stream });
    log.info({
      config: { telegram: { token: '123:SECRET-A', webhookSecret: 'SECRET-B' }, llm: { apiKey: 'SECRET-C' }, http: { monitorToken: 'SECRET-D' }, discord: { token: 'SECRET-E' } },
      req: { headers: { authorization: 'Bearer SECRET-F' } },
    }, 'starting');
    const text = JSON.stringify(out.lines());
    for (const secret of ['SECRET-A', 'SECRET-B', 'SECRET-C', 'SECRET-D', 'SECRET-E', 'SECRET-F']) expect(text).not.toContain(secret);
    expect(text).toContain('[Redacted]');
  });

  it('binds the unit of work on child loggers', () => {
    const out = sink();
    createLogger({ destination: out.stream }).child({ sessionId: 'telegram:42', channel: 'telegram', jobId: '7' }).info({ tokens: 12 }, 'reply sent');
    expect(out.lines()[0]).toMatchObject({ sessionId: 'telegram:42', channel: 'telegram', jobId: '7', tokens: 12, msg: 'reply sent' });
  });
});
