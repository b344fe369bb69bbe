/**
 * The ready banner of `chatgate start` names every address a newcomer opens next: with
 * CHATGATE_API_KEYS set, the OpenAI-compatible API's base URL beside the web chat, and that URL
 * answers a client holding one of the keys.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startDemo, type Demo } from '../helpers/cli-process.js';

const KEY = 'sk-banner-0123456789abcdef';

describe('chatgate start: the ready banner', () => {
  let demo: Demo | undefined;
  afterAll(async () => {
    await demo?.stop();
  });

  it('names the OpenAI-compatible API\'s base URL when CHATGATE_API_KEYS is set, and it answers there', async () => {
    demo = await startDemo({ CHATGATE_API_KEYS: `${KEY}=alice` });
    const line = /^API: +(http:\/\/\S+\/v1) \(OpenAI-compatible, model chatgate, 1 key in CHATGATE_API_KEYS\)$/m.exec(demo.proc.stderr.text);
    expect(line?.[1]).toBe(`${demo.origin}/v1`);
    const models = await fetch(`${line![1]}/models`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(await models.json()).toMatchObject({ data: [{ id: 'chatgate' }] });
    expect(demo.proc.stderr.text).not.toContain(KEY);
  });
});
