import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, resolveLogFormat, type LogFormat, type LogFormatSetting } from '../../src/log.js';
import { duplicateJsonKeys } from '../helpers/json-keys.js';

/** A logger into memory: the raw text it wrote. */
function sink(format?: LogFormat, level = 'debug') {
  const out = { text: '' };
  const destination = new Writable({ write(chunk: Buffer, _e, done) { out.text += chunk.toString('utf8'); done(); } });
  return { out, logger: createLogger({ level, destination, format, base: { pid: 42 } }) };
}

describe('resolveLogFormat', () => {
  it.each<[LogFormatSetting, boolean, LogFormat]>([
    ['auto', true, 'pretty'], ['auto', false, 'json'], ['pretty', false, 'pretty'], ['pretty', true, 'pretty'], ['json', true, 'json'], ['json', false, 'json'],
  ])('%s with a terminal=%s → %s', (setting, tty, format) => expect(resolveLogFormat(setting, tty)).toBe(format));
});

describe('createLogger', () => {
  it('redacts secrets wherever the configuration puts them', () => {
    const { out, logger } = sink();
    logger.info({
      config: { telegram: { token: '123:SECRET-A', webhookSecret: 'SECRET-B' }, llm: { apiKey: 'SECRET-C' }, http: { monitorToken: 'SECRET-D' }, discord: { token: 'SECRET-E' } },
      req: { headers: { authorization: 'Bearer SECRET-F' } },
    }, 'starting');
    for (const secret of ['SECRET-A', 'SECRET-B', 'SECRET-C', 'SECRET-D', 'SECRET-E', 'SECRET-F']) expect(out.text).not.toContain(secret);
    expect(out.text).toContain('[Redacted]');
  });

  it('binds the unit of work on child loggers', () => {
    const { out, logger } = sink();
    logger.child({ sessionId: 'telegram:42', channel: 'telegram', jobId: '7' }).info({ tokens: 12 }, 'reply sent');
    expect(JSON.parse(out.text)).toMatchObject({ sessionId: 'telegram:42', channel: 'telegram', jobId: '7', tokens: 12, msg: 'reply sent' });
  });

  it('never repeats a key when a child binds one its parent bound: the child\'s value wins', () => {
    const { out, logger } = sink();
    const turn = logger.child({ component: 'worker' }).child({ sessionId: 's1', jobId: '7' });
    turn.child({ component: 'llm' }).info({ tokens: 5 }, 'model call');
    turn.child({ component: 'worker', sessionId: 's1' }).debug({}, 'same values');
    turn.child({ component: 'llm' }).child({ component: 'summarizer' }).warn({}, 'deeper');
    const lines = out.text.trim().split('\n');
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(duplicateJsonKeys(line), line).toEqual([]);
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed[0]).toMatchObject({ component: 'llm', sessionId: 's1', jobId: '7', pid: 42, tokens: 5, msg: 'model call' });
    expect(parsed[1]).toMatchObject({ component: 'worker', sessionId: 's1', jobId: '7' });
    expect(parsed[2]).toMatchObject({ component: 'summarizer', sessionId: 's1', jobId: '7', level: 40 });
  });

  it('leaves a key out of a line\'s object when the logger binds it with the same value', () => {
    const { out, logger } = sink();
    logger.child({ sessionId: 'web:a', channel: 'web' }).info({ sessionId: 'web:a', channel: 'web', chunks: 1 }, 'sent');
    expect(duplicateJsonKeys(out.text.trim())).toEqual([]);
    expect(JSON.parse(out.text)).toMatchObject({ sessionId: 'web:a', channel: 'web', chunks: 1 });
  });

  it('keeps a rebuilt child at its parent\'s level and redacts secrets in it', () => {
    const { out, logger } = sink(undefined, 'info');
    const child = logger.child({ component: 'gateway' }).child({ component: 'ingest' });
    child.debug({}, 'hidden');
    child.info({ token: '123:secret', headers: { authorization: 'Bearer x' } }, 'shown');
    expect(out.text).not.toContain('hidden');
    expect(out.text).not.toContain('secret');
    expect(JSON.parse(out.text)).toMatchObject({ token: '[Redacted]', headers: { authorization: '[Redacted]' }, component: 'ingest' });
  });

  it('writes pretty lines for a person: time, level, component and message first, no JSON braces around them', () => {
    const { out, logger } = sink('pretty');
    logger.child({ component: 'outbound' }).child({ sessionId: 'web:a' }).info({ chunks: 2, token: 'x:secret' }, 'reply delivered');
    const line = out.text.trim();
    expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: outbound: reply delivered \{.*"sessionId":"web:a".*"chunks":2.*\}$/);
    expect(line).not.toContain('secret');
    expect(line).not.toContain('"pid"');
    expect(() => JSON.parse(line)).toThrow();
  });

  it('writes the line before the call returns in both formats (nothing waits in a buffer at a crash)', () => {
    for (const format of ['json', 'pretty'] as const) {
      const { out, logger } = sink(format);
      logger.fatal({}, 'last words');
      expect(out.text, format).toContain('last words');
    }
  });
});
