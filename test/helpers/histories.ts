import type { ChatMessage } from '../../src/index.js';

/** Filler prose of about `words` words. */
export function prose(words: number, salt = ''): string {
  const vocabulary = ['the', 'order', 'was', 'shipped', 'quickly', 'and', 'customer', 'asked', 'about', 'delivery', 'window', 'today', 'please', 'check', 'status'];
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(vocabulary[(i * 7 + salt.length) % vocabulary.length]);
  return out.join(' ');
}

/** A chat of `turns` user/assistant exchanges after a system prompt. */
export function chatHistory(turns: number, wordsPerMessage = 60): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: 'You are a helpful shop assistant.' }];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: 'user', content: `Turn ${i}: ${prose(wordsPerMessage, String(i))}` });
    messages.push({ role: 'assistant', content: `Answer ${i}: ${prose(wordsPerMessage, `a${i}`)}` });
  }
  return messages;
}

/** A tool-heavy history: each turn a user ask, one tool call with a large result, an answer. */
export function toolHistory(turns: number, resultWords = 400): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: 'You are a helpful shop assistant.' }];
  for (let i = 0; i < turns; i++) {
    const id = `call_${i}`;
    messages.push({ role: 'user', content: `Look up order number ${i}` });
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'get_order', arguments: JSON.stringify({ order: i }) } }] });
    messages.push({ role: 'tool', tool_call_id: id, content: `{"order": ${i}, "notes": "${prose(resultWords, `t${i}`)}"}` });
    messages.push({ role: 'assistant', content: `Order ${i} is on its way.` });
  }
  return messages;
}
