import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../src/core/messages.js';
import { REPLY_PRIMING_TOKENS } from '../../src/core/tokens.js';
import type { ToolSchema } from '../../src/llm/client.js';
import { overheadTokens } from '../../workers/model-request.js';
import { createTokenCounter } from '../../src/llm/encodings.js';

// gpt-4 counts with cl100k_base, loaded on demand as the composition root wires it.
const tokens = createTokenCounter();

const tool = (name: string, description: string): ToolSchema => ({
  type: 'function', function: { name, description, parameters: { type: 'object', properties: { q: { type: 'string' } } } },
});

/** What overheadTokens must equal: every prefix message and the schemas counted afresh. */
function uncached(prefix: ChatMessage[], tools: ToolSchema[], model?: string): number {
  return REPLY_PRIMING_TOKENS + prefix.reduce((sum, m) => sum + tokens.messageTokens(m, model), 0) + (tools.length > 0 ? tokens.countText(JSON.stringify(tools), model) : 0);
}

describe('overheadTokens (counts cached per text and model)', () => {
  it('gives the uncached count on every call, for changing tool sets, prompts and models', () => {
    const system: ChatMessage = { role: 'system', content: 'You are a helpful assistant.' };
    const small = [tool('search', 'Search the web.')];
    const large = [...small, tool('get_order', 'Look an order up by its id, e.g. ORD-48213-XK. '.repeat(20))];
    for (let round = 0; round < 3; round++) {
      for (const tools of [small, large, []]) {
        for (const model of ['gpt-4o-mini', 'gpt-4', undefined]) {
          const notes: ChatMessage = { role: 'system', content: `notes ${round}` };
          expect(overheadTokens([system, notes], tools, tokens, model)).toBe(uncached([system, notes], tools, model));
        }
      }
    }
    // The same schemas in a new array (a registry building them per call) count the same.
    expect(overheadTokens([system], structuredClone(large), tokens, 'gpt-4o-mini')).toBe(uncached([system], large, 'gpt-4o-mini'));
    expect(overheadTokens([system], large, tokens, 'gpt-4o-mini')).toBeGreaterThan(overheadTokens([system], small, tokens, 'gpt-4o-mini'));
  });

  it('counts right after many distinct prompts pushed earlier counts out of the cache', () => {
    for (let i = 0; i < 200; i++) {
      const prompt: ChatMessage = { role: 'system', content: `prompt number ${i} `.repeat(1 + (i % 5)) };
      expect(overheadTokens([prompt], [], tokens, 'gpt-4o-mini')).toBe(uncached([prompt], [], 'gpt-4o-mini'));
    }
  });
});
