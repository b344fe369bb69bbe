import { describe, expect, it } from 'vitest';
import { countMessageTokens, type ChatMessage } from '../../../src/index.js';
import { messageText } from '../../../src/core/messages.js';
import { chatHistory, prose, toolHistory } from '../../helpers/histories.js';
import { chained } from '../../helpers/compaction.js';
import { faithfulSummarizer, lossySummarizer, recordingSummarizer, vagueSummarizer } from '../../helpers/summarizers.js';

const WINDOW = 16_000;
const PLANTED = ['ORD-48213-XK', 'INV-2024-001', '#4471', '5550123456', '/srv/app/config.yaml', 'https://status.example.com/incidents/77', 'ops@example.com', '$1,299.00', '2025-03-14', 'TRK-99812-QZ'];

function allText(messages: ChatMessage[]): string {
  return messages.map((m) => `${messageText(m)} ${m.role === 'assistant' ? JSON.stringify(m.tool_calls ?? []) : ''}`).join('\n');
}

/** A history with each planted identifier said once, early, by the user, the assistant or a tool. */
function plantedHistory(turns: number): ChatMessage[] {
  const history = toolHistory(turns, 250);
  PLANTED.forEach((fact, k) => {
    const index = 5 + k * 4; // user messages of turns 1.., well before the tail
    const m = history[index];
    if (k % 3 === 0 && m.role === 'user') history[index] = { role: 'user', content: `${messageText(m)} — reference ${fact}` };
    else if (k % 3 === 1) history[index + 2] = { role: 'tool', tool_call_id: `call_${(index - 1) / 4}`, content: `{"ref":"${fact}","body":"${prose(250)}"}` };
    else history[index + 3] = { role: 'assistant', content: `Noted ${fact}.` };
  });
  return history;
}

function selfExchangeTokens(messages: ChatMessage[]): number {
  let last = -1;
  messages.forEach((m, i) => { if (m.role === 'user') last = i; });
  return countMessageTokens(messages.slice(last)) - 3;
}

describe('ContextCompressor pinning', () => {
  it('keeps every planted identifier when the summariser answers one vague sentence', async () => {
    const result = await chained({ contextWindow: WINDOW, summarizer: vagueSummarizer() }).compress(plantedHistory(40), { force: true });
    expect(result.outcome).toBe('compacted');
    const text = allText(result.messages);
    for (const fact of PLANTED) expect(text).toContain(fact);
    expect(result.pinnedFacts).toEqual(expect.arrayContaining(['ORD-48213-XK', '#4471']));
  });

  it('keeps an identifier that lived only in a tool result after the compaction that pruned it', async () => {
    const history = toolHistory(40, 250);
    history[23] = { role: 'tool', tool_call_id: 'call_5', content: `{"tracking":"1Z999AA10123456784","body":"${prose(300)}"}` };
    const result = await chained({ contextWindow: WINDOW, summarizer: vagueSummarizer() }).compress(history, { force: true });
    expect(allText(result.messages)).toContain('1Z999AA10123456784');
  });

  it('never mines chatgate notes: prune notes and summaries add no facts of their own', async () => {
    const c = chained({ contextWindow: WINDOW, summarizer: vagueSummarizer() });
    const result = await c.compress(toolHistory(60, 300));
    expect(Object.keys(result.state.facts).some((f) => /^\d{1,3}(,\d{3})+$/.test(f) || f.includes('chars'))).toBe(false);
  });

  it('keeps every planted identifier over 10 chained compactions with a summariser that drops 30%', async () => {
    const c = chained({ contextWindow: WINDOW, summarizer: lossySummarizer(11) });
    let history = plantedHistory(30);
    let state = c.state;
    for (let round = 0; round < 10; round++) {
      const result = await c.compress(history, { force: true, state });
      state = result.state;
      const text = allText(result.messages);
      for (const fact of PLANTED) expect(text, `round ${round}`).toContain(fact);
      history = [...result.messages, ...toolHistory(12, 250).slice(1).map((m) => renameCalls(m, round))];
    }
  });
});

describe('ContextCompressor thrash and the hard limit', () => {
  it('leaves at most half the trigger beyond the system prompt and the latest exchange', async () => {
    for (const summarizer of [faithfulSummarizer(), vagueSummarizer(), recordingSummarizer(() => prose(20_000))]) {
      const c = chained({ contextWindow: WINDOW, summarizer });
      const history = [...chatHistory(50, 150), ...toolHistory(6, 300).slice(1)];
      history.push({ role: 'user', content: `Last question ${prose(100)}` });
      const result = await c.compress(history);
      expect(result.outcome).toBe('compacted');
      const system = countMessageTokens(history.slice(0, 1)) - 3;
      expect(result.tokensAfter).toBeLessThanOrEqual(Math.floor(c.thresholdTokens / 2) + system + selfExchangeTokens(history));
    }
  });

  it('lets the tail floor yield to the token budget when the tail is full of tool output', async () => {
    const c = chained({ contextWindow: WINDOW, summarizer: vagueSummarizer() });
    const history = [...chatHistory(30, 120), ...toolHistory(4, 1500).slice(1)];
    history.push({ role: 'user', content: 'next' });
    const result = await c.compress(history);
    expect(result.outcome).toBe('compacted');
    expect(result.tokensAfter).toBeLessThan(c.thresholdTokens);
    expect(result.messages.some((m) => m.role === 'tool' && m.content.startsWith('[chatgate:trimmed'))).toBe(true);
    expect(result.messages.at(-1)).toEqual(history.at(-1));
  });

  it('pauses automatic compaction after two ineffective compactions; force overrides', async () => {
    const c = chained({ contextWindow: WINDOW, summarizer: vagueSummarizer() });
    const history = chatHistory(60);
    const overhead = 7_700; // big tool schemas: the request stays over the trigger whatever is compacted
    const first = await c.compress(history, { requestTokens: countMessageTokens(history) + overhead });
    expect(first.pausedNow).toBe(false);
    const again = [...first.messages, ...chatHistory(10).slice(1)];
    const second = await c.compress(again, { requestTokens: countMessageTokens(again) + overhead });
    expect(second.pausedNow).toBe(true);
    expect(second.state.paused).toBe(true);
    expect(c.shouldCompress(c.thresholdTokens + 10)).toBe(false);
    expect(c.shouldCompress(c.limitTokens + 1)).toBe(true);
    const noop = await c.compress(again, { requestTokens: c.thresholdTokens + 10 });
    expect(noop.outcome).toBe('noop');
    const forced = await c.compress(again, { force: true });
    expect(forced.outcome).toBe('compacted');
    expect(forced.state.paused).toBe(false);
  });

  it('never returns a request over the window, overhead included, while paused too', async () => {
    const c = chained({ contextWindow: WINDOW, summarizer: recordingSummarizer(() => prose(30_000)), reservedOutputTokens: 1_000 });
    c.state = { ...c.state, paused: true };
    const history = toolHistory(40, 700);
    history.push({ role: 'user', content: 'go' });
    const overhead = 4_000;
    const result = await c.compress(history, { requestTokens: countMessageTokens(history) + overhead });
    expect(result.tokensAfter + overhead).toBeLessThanOrEqual(WINDOW - 1_000);
    expect(result.messages.at(-1)).toEqual(history.at(-1));
  });
});

function renameCalls(message: ChatMessage, round: number): ChatMessage {
  if (message.role === 'tool') return { ...message, tool_call_id: `${message.tool_call_id}_r${round}` };
  if (message.role === 'assistant' && message.tool_calls) {
    return { ...message, tool_calls: message.tool_calls.map((c) => ({ ...c, id: `${c.id}_r${round}` })) };
  }
  return message;
}
