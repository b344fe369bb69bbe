import { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { redactSecrets, toLlmError } from '../../src/llm/errors.js';

describe('toLlmError', () => {
  it('names the status once, with the provider\'s words', () => {
    const refused = APIError.generate(404, { error: { message: 'The model `gpt-x` does not exist', code: 'model_not_found' } }, undefined, new Headers());
    expect(toLlmError(refused, 'chat completion with gpt-x')).toMatchObject({ message: 'chat completion with gpt-x failed (404: The model `gpt-x` does not exist)', kind: 'permanent', status: 404 });
  });
});

describe('redactSecrets', () => {
  it.each([
    ['the given key', 'bad key my-local-key-123 sent', ['my-local-key-123'], 'bad key [Redacted] sent'],
    ['an OpenAI key shape', 'Incorrect API key provided: sk-proj-abcDEF123456789.', [], 'Incorrect API key provided: [Redacted].'],
    ['a bearer token', 'header Authorization: Bearer eyJhbGciOi.J9x-y_z', [], 'header Authorization: [Redacted]'],
    ['every occurrence', 'k1=sk-aaaaaaaaaaaa k2=sk-bbbbbbbbbbbb', [], 'k1=[Redacted] k2=[Redacted]'],
    ['nothing secret', 'model overloaded, try later (sk-short)', [], 'model overloaded, try later (sk-short)'],
  ])('redacts %s', (_name, text, secrets, expected) => {
    expect(redactSecrets(text, secrets)).toBe(expected);
  });
});
