import { describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { createSessionStore } from '../../src/redis/session-store.js';
import { readTranscript } from '../../src/redis/transcript.js';
import type { FakeHandler, FakeReply } from '../fakes/openai-server.js';
import type { Stack } from '../helpers/stack.js';
import { useTelegramFixture } from '../helpers/telegram-stack.js';

const tg = useTelegramFixture();

async function start(handler: FakeHandler, env: Record<string, string> = {}): Promise<Stack> {
  return tg.start({ handler, env });
}

const texts = tg.sent;
const say = (text: string) => tg.telegram.pushMessage({ text });
/** Says `text` and resolves with the next message the bot sends. */
const ask = (text: string): Promise<string> => tg.next(() => say(text));
const lastUserText = (s: Stack) => messageText(s.agentRequests().at(-1)!.messages.at(-1)!);
const projection = async (s: Stack) => (await createSessionStore({ redis: s.t.redis }, { keyPrefix: s.t.keyPrefix }).load('telegram:42')).entries.map((e) => e.message);

describe('chat commands people expect (Telegram)', () => {
  it('/start greets with the commands, and the command menu was registered with setMyCommands', async () => {
    const s = await start(() => ({ content: 'ok' }));
    const answer = await ask('/start');
    expect(answer).toMatch(/^Hello!/);
    for (const command of ['/new', '/stop', '/retry', '/compact', '/usage', '/help']) expect(answer).toContain(command);
    const registered = (tg.telegram.callsOf('setMyCommands')[0]!.params.commands as Array<{ command: string }>).map((c) => c.command);
    expect(registered).toEqual(expect.arrayContaining(['new', 'stop', 'retry', 'compact', 'usage', 'status', 'pins', 'help']));
    expect(s.agentRequests()).toHaveLength(0);
  });

  it('starts and answers when setMyCommands is refused (a warning, not a failed start)', async () => {
    tg.telegram.failNext('setMyCommands', { errorCode: 400, description: 'Bad Request: BOT_COMMAND_INVALID' });
    await start(() => ({ content: 'still here' }));
    expect(await ask('hello')).toBe('still here');
    expect(await ask('/help')).toContain('/retry');
  });

  it('/new starts a fresh session with the right plural; /compress compacts; a short conversation has nothing to compact', async () => {
    const s = await start((request) => ({ content: `Answer ${request.index}. ${'detail of the answer '.repeat(60)}` }));
    expect(await ask('/compress')).toBe('Nothing to compact yet — the conversation is still short.');
    for (let i = 0; i < 8; i++) await ask(`question ${i}`);
    const compacted = await ask('/compress the questions');
    const match = /^Compacted \(focus: the questions\): ([\d,]+) → ([\d,]+) tokens\./.exec(compacted);
    expect(match, compacted).not.toBeNull();
    expect(Number(match![2]!.replace(/,/g, ''))).toBeLessThan(Number(match![1]!.replace(/,/g, '')));
    expect(compacted).not.toMatch(/noop|head and tail/);
    const count = (await projection(s)).length;
    expect(await ask('/new')).toBe(`Started a fresh conversation (${count} messages left the context; the transcript keeps them).`);
    expect(await ask('/status')).toContain('0 messages in context');
    await ask('one more');
    expect(await ask('/new')).toBe('Started a fresh conversation (2 messages left the context; the transcript keeps them).');
    expect(await ask('/new')).toBe('Started a fresh conversation (the context was already empty).');
  });

  it('/stop aborts a hanging model call, commits nothing of it, answers "Stopped." and the next message works', async () => {
    let hang = true;
    const s = await start(() => (hang ? { hold: new Promise<FakeReply>(() => undefined) } : { content: 'fresh answer' }));
    expect(await ask('/stop')).toBe('Nothing is running right now, so there is nothing to stop.');
    say('write me a very long essay');
    await s.llm.waitForRequest(() => s.agentRequests().length === 1);
    expect(await ask('/stop')).toBe('Stopped.');
    const keys = sessionKeys('telegram:42', s.t.keyPrefix);
    expect(await s.t.redis.exists(keys.steps, keys.processing)).toBe(0);
    expect((await projection(s)).map((m) => m.role)).toEqual(['user']);
    hang = false;
    expect(await ask('and now something short')).toBe('fresh answer');
    expect(lastUserText(s)).toBe('and now something short');
    const transcript = await readTranscript(s.t.redis, keys);
    expect(transcript.filter((e) => e.type === 'message').map((e) => e.type === 'message' && e.message.role)).toEqual(['user', 'user', 'assistant']);
    expect(await ask('/stop')).toBe('Nothing is running right now, so there is nothing to stop.');
  });

  it('/usage counts the system prompt and tools in the next request, from the first turn on, as the sessions API does', async () => {
    let hang = true;
    const s = await start(() => (hang ? { hold: new Promise<FakeReply>(() => undefined) } : { content: 'the answer' }));
    say('hello there');
    const hung = await s.llm.waitForRequest(() => true);
    const figure = async () => {
      const line = (await ask('/usage')).split('\n').find((l) => l.startsWith('Context: next request ≈ '))!;
      const shown = Number(/≈ ([\d,]+) of/.exec(line)![1]!.replace(/,/g, ''));
      const detail = (await (await fetch(`${s.gateway.httpUrl}/api/sessions/${encodeURIComponent('telegram:42')}`)).json()) as { context: { tokens: number } };
      expect(detail.context.tokens).toBe(shown);
      return shown;
    };
    // The request the model is working on is the next request as far as the session knows: system prompt and tool schemas included.
    const during = await figure();
    expect(during).toBeGreaterThanOrEqual(hung.promptTokens);
    expect(during).toBeLessThan(hung.promptTokens + 20);
    expect(await ask('/stop')).toBe('Stopped.');
    hang = false;
    await ask('/new');
    const afterReset = await figure();
    expect(afterReset).toBeGreaterThan(hung.promptTokens - 20);
    expect(await ask('again')).toBe('the answer');
    expect(afterReset).toBeLessThanOrEqual(s.llm.requests.at(-1)!.promptTokens + 5);
  });

  it('/retry asks the last message again without its old answer; says so when there is nothing to retry', async () => {
    const s = await start((request) => ({ content: `Answer ${request.index}` }));
    expect(await ask('/retry')).toBe('There is nothing to retry yet: none of your messages is in the conversation.');
    expect(await ask('first question')).toBe('Answer 0');
    expect(await ask('second question')).toBe('Answer 1');
    expect(await ask('/retry')).toBe('Asking again: “second question”');
    await tg.until(() => texts().includes('Answer 2'));
    const request = s.agentRequests()[2]!;
    expect(messageText(request.messages.at(-1)!)).toBe('second question');
    const seen = request.messages.map((m) => messageText(m));
    expect(seen).not.toContain('Answer 1');
    expect(seen).toContain('Answer 0');
    expect(seen.filter((t) => t === 'second question')).toHaveLength(1);
    expect((await projection(s)).map((m) => messageText(m))).toEqual(['first question', 'Answer 0', 'second question', 'Answer 2']);
    // The transcript keeps the first answer: nothing a person saw is destroyed.
    const transcript = await readTranscript(s.t.redis, sessionKeys('telegram:42', s.t.keyPrefix));
    expect(transcript.some((e) => e.type === 'message' && messageText(e.message) === 'Answer 1')).toBe(true);
  });

  it('/retry while a reply is being written says to wait; /stop then /retry asks again', async () => {
    let hang = true;
    const s = await start((request) => (hang ? { hold: new Promise<FakeReply>(() => undefined) } : { content: `Answer ${request.index}` }));
    say('a question that hangs');
    await s.llm.waitForRequest(() => s.agentRequests().length === 1);
    expect(await ask('/retry')).toBe('A reply is being written, or waits for your approval of a tool call. Let it finish (or send /stop), then /retry.');
    expect(await ask('/stop')).toBe('Stopped.');
    hang = false;
    expect(await ask('/retry')).toBe('Asking again: “a question that hangs”');
    await tg.until(() => texts().includes('Answer 1'));
    expect(lastUserText(s)).toBe('a question that hangs');
    expect((await projection(s)).map((m) => messageText(m))).toEqual(['a question that hangs', 'Answer 1']);
  });
});
