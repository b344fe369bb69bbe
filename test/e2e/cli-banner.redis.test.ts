/**
 * What `chatgate start` tells a newcomer on its way up: a warning for a variable that looks like
 * a misspelt option (ignored otherwise without a word), and a ready banner naming every address
 * to open next: with CHATGATE_API_KEYS set, the OpenAI-compatible API's base URL beside the web
 * chat, which answers a client holding one of the keys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemo, type Demo } from '../helpers/cli-process.js';

const KEY = 'sk-banner-0123456789abcdef';

describe('chatgate start: its warnings and ready banner', () => {
  let demo: Demo;
  beforeAll(async () => {
    demo = await startDemo({ CHATGATE_API_KEYS: `${KEY}=alice`, CHATGATE_TRESHOLD: '0.6' });
  });
  afterAll(async () => {
    await demo?.stop();
  });

  it('names the OpenAI-compatible API\'s base URL when CHATGATE_API_KEYS is set, and it answers there', async () => {
    const line = /^API: +(http:\/\/\S+\/v1) \(OpenAI-compatible, model chatgate, 1 key in CHATGATE_API_KEYS\)$/m.exec(demo.proc.stderr.text);
    expect(line?.[1]).toBe(`${demo.origin}/v1`);
    const models = await fetch(`${line![1]}/models`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(await models.json()).toMatchObject({ data: [{ id: 'chatgate' }] });
    expect(demo.proc.stderr.text).not.toContain(KEY);
  });

  it('warns once about a variable that looks like a misspelt option, naming the option it is near', () => {
    const warnings = demo.proc.stderr.text.split('\n').filter((line) => line.startsWith('chatgate: warning:'));
    expect(warnings).toEqual(['chatgate: warning: `CHATGATE_TRESHOLD` is not a chatgate option (did you mean `CHATGATE_THRESHOLD`?); it is ignored']);
  });
});
