import { describe, expect, it } from 'vitest';
import { countMessageTokens, countTextTokens, decideHygiene } from '../../../src/index.js';
import { encodingForModel } from '../../../src/core/tokens.js';

describe('decideHygiene', () => {
  it.each([
    [{ messageCount: 10, requestTokens: 85_000, contextWindow: 100_000 }, true, 85_000],
    [{ messageCount: 10, requestTokens: 84_999, contextWindow: 100_000 }, false, 85_000],
    [{ messageCount: 3, requestTokens: 99_000, contextWindow: 100_000 }, false, 85_000],
    [{ messageCount: 4, requestTokens: 90_000, contextWindow: 100_000, threshold: 0.9 }, true, 90_000],
    [{ messageCount: 4, requestTokens: 76_500, contextWindow: 100_000, reservedOutputTokens: 10_000 }, true, 76_500],
  ])('decides %o → %s', (input, compact, thresholdTokens) => {
    expect(decideHygiene(input)).toEqual({ compact, thresholdTokens });
  });

  it('rejects a threshold outside (0, 1]', () => {
    expect(() => decideHygiene({ messageCount: 5, requestTokens: 1, contextWindow: 10, threshold: 1.2 })).toThrow('`threshold` must be in (0, 1] (got 1.2)');
  });
});

describe('token counting', () => {
  it('picks the encoding by model, o200k_base by default', () => {
    expect(encodingForModel()).toBe('o200k_base');
    expect(encodingForModel('gpt-4o-mini')).toBe('o200k_base');
    expect(encodingForModel('gpt-4')).toBe('cl100k_base');
    expect(encodingForModel('gpt-3.5-turbo')).toBe('cl100k_base');
  });

  it('counts message framing on top of the content', () => {
    const content = 'Hello there, how are you today?';
    const one = countMessageTokens([{ role: 'user', content }]);
    expect(one).toBeGreaterThan(countTextTokens(content));
    const two = countMessageTokens([{ role: 'user', content }, { role: 'assistant', content }]);
    expect(two - one).toBe(one - 3);
  });

  it('counts tool calls and their arguments', () => {
    const bare = countMessageTokens([{ role: 'assistant', content: null }]);
    const withCall = countMessageTokens([{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'get_order', arguments: '{"order":48213}' } }] }]);
    expect(withCall - bare).toBeGreaterThanOrEqual(countTextTokens('{"order":48213}') + countTextTokens('get_order'));
  });
});
