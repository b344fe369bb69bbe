/**
 * The OpenAI-compatible API under the gateway's rules, end to end with the `openai` SDK: the rate
 * limit (429 `rate_limit_exceeded` with Retry-After), a used-up budget (429 `insufficient_quota`)
 * and the allow-list (403), each answered at once, nothing added to the session; a tool call that
 * asks for approval, decided with `/approve` as the next message.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startStack, type Stack } from '../helpers/stack.js';

const KEY = 'sk-limits-0123456789abcdef';
const OTHER_KEY = 'sk-other-0123456789abcdef';

let stack: Stack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function start(env: Record<string, string>, worker = {}): Promise<OpenAI> {
  stack = await startStack({
    handler: (request) => {
      const last = request.messages.at(-1)!;
      if (last.role === 'tool') return { content: `computed ${String(last.content)}` };
      if (String(last.content).startsWith('tool:')) return { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] };
      return { content: `answer ${request.index}`, usage: { prompt_tokens: 1000, completion_tokens: 100 } };
    },
    env: { CHATGATE_API_KEYS: `${KEY}=alice,${OTHER_KEY}=mallory`, ...env }, worker,
  });
  return new OpenAI({ baseURL: `${stack.gateway.httpUrl}/v1`, apiKey: KEY, maxRetries: 0 });
}

const ask = (client: OpenAI, content: string) => client.chat.completions.create({ model: 'chatgate', messages: [{ role: 'user', content }] });

describe('the API under the gateway limits', () => {
  it('answers 429 with Retry-After over the rate limit; commands do not count', async () => {
    const client = await start({ CHATGATE_RATE_LIMIT_PER_MINUTE: '1' });
    expect((await ask(client, 'one')).choices[0]!.message.content).toMatch(/^answer/);
    const limited = await ask(client, 'two').catch((err: unknown) => err);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited).toMatchObject({ status: 429, code: 'rate_limit_exceeded', type: 'rate_limit_error' });
    expect(Number((limited as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await ask(client, '/help')).choices[0]!.message.content).toContain('/usage');
  });

  it('answers 429 insufficient_quota once the user\'s budget is used up, and 403 to a user off the allow-list', async () => {
    // A call needs room for its worst case (prompt + 4,096 output tokens): the first fits, the second no longer does.
    const env = { CHATGATE_BUDGET_USER_DAILY_TOKENS: '5000', CHATGATE_ALLOW_API: 'alice' };
    const client = await start(env, { budgets: loadConfig(env).budgets });
    expect((await ask(client, 'spend')).usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 100 });
    // The turn finds no room for its next call: it answers with the budget message, calling no model,
    // as the gateway's early answer does (the same 429 and body), whole or streamed.
    const refused = await ask(client, 'more').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect(refused).toMatchObject({ status: 429, code: 'insufficient_quota', type: 'insufficient_quota' });
    expect((refused as Error).message).toMatch(/^429 You have nearly used today's budget of 5,000 tokens: 3,900 tokens are left, not enough for another answer\./);
    // From then on the gateway answers at once.
    const over = await ask(client, 'more again').catch((err: unknown) => err);
    expect(over).toMatchObject({ status: 429, code: 'insufficient_quota', type: 'insufficient_quota' });
    expect((over as Error).message).toMatch(/^429 You have nearly used today's budget of 5,000 tokens: 3,900 tokens are left, not enough for another answer\./);
    const mallory = new OpenAI({ baseURL: `${stack!.gateway.httpUrl}/v1`, apiKey: OTHER_KEY, maxRetries: 0 });
    const denied = await ask(mallory, 'let me in').catch((err: unknown) => err);
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(denied).toMatchObject({ status: 403, code: 'user_not_allowed' });
    expect(stack!.agentRequests()).toHaveLength(1);
  });

  it('a streamed request over the budget is a 429 too, before any chunk', async () => {
    const env = { CHATGATE_BUDGET_USER_DAILY_TOKENS: '5000' };
    const client = await start(env, { budgets: loadConfig(env).budgets });
    expect((await ask(client, 'spend')).usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 100 });
    const stream = (content: string) => client.chat.completions.create({ model: 'chatgate', messages: [{ role: 'user', content }], stream: true });
    for (const content of ['more', 'more again']) {
      const refused = await stream(content).catch((err: unknown) => err);
      expect(refused, content).toMatchObject({ status: 429, code: 'insufficient_quota' });
      expect((refused as Error).message).toMatch(/^429 You have nearly used today's budget of 5,000 tokens/);
    }
    expect(stack!.agentRequests()).toHaveLength(1);
  });

  it('gives an API user the notice at the notice share at the end of the answer (an API answer is all they see)', async () => {
    const env = { CHATGATE_BUDGET_USER_DAILY_TOKENS: '5000', CHATGATE_BUDGET_NOTICE_PERCENT: '20' };
    const client = await start(env, { budgets: loadConfig(env).budgets });
    const answer = (await ask(client, 'spend')).choices[0]!.message.content!;
    expect(answer).toMatch(/^answer 0\n\nYou have used 22% of today's budget of 5,000 tokens: 3,900 tokens are left\. It resets at 00:00 UTC, in /);
  });

  it('answers a tool call that asks for approval with the question; /approve answers with the turn\'s answer', async () => {
    const env = { CHATGATE_TOOL_APPROVAL: 'calculator=ask' };
    const client = await start(env, { toolApproval: loadConfig(env).approvals.rules });
    const question = (await ask(client, 'tool: compute it')).choices[0]!.message.content!;
    expect(question).toContain('**Approval needed**');
    const id = /\/approve (\S+)/.exec(question)![1]!;
    const answer = await ask(client, `/approve ${id}`);
    expect(answer.choices[0]!.message.content).toMatch(/^computed .*"result":42/);
    // Decided before: answered at once with what the gateway says.
    const again = await ask(client, `/approve ${id}`);
    expect(again.choices[0]!.message.content).not.toMatch(/^computed/);
    expect(again.usage).toMatchObject({ prompt_tokens: 0, completion_tokens: 0 });
  });
});
