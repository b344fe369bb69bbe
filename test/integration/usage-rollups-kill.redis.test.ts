/**
 * Rollups against the sessions' ledgers after a run of `chatgate worker` processes in which workers
 * are SIGKILLed mid-turn (between a turn's committed tool round and its final commit, and during
 * calls): each turn's usage enters the ledger and the rollups in the same commit, so the two agree
 * exactly, however often a turn was retried. No double count.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage, OutboundMessage } from '../../src/core/inbound.js';
import { messageText, type ChatMessage } from '../../src/core/messages.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { readUsage } from '../../src/redis/usage.js';
import { createUsageReader } from '../../src/usage/read-model.js';
import type { FakeReply } from '../fakes/openai-server.js';
import { pollUntil } from '../helpers/waits.js';
import { FAST_LEASES, openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const SESSIONS = 8;
const MESSAGES = 3;

describe('usage rollups with workers killed mid-turn', () => {
  let rig: WorkerRig;
  const startWorker = (): Promise<ChildProcess> => rig.spawnCliWorker(FAST_LEASES);

  beforeEach(async () => { rig = await openWorkerRig(); });
  afterEach(async () => { await rig.close(); });

  it('equal the sum of the ledgers after SIGKILLs, by chat, user and in total (test 6)', async () => {
    const { t, fake, producer, out } = rig;
    // Each turn: a tool round (committed), then the answer. Every call after the first `holdAfter`
    // waits: the gate is decided as each call arrives, so a round never misses the work still to do.
    let calls = 0;
    let holdAfter = 4;
    const held: Array<(reply: FakeReply) => void> = [];
    fake.setHandler((r) => {
      const answer = answerOf(r.messages);
      if ((calls += 1) <= holdAfter) return answer;
      return { hold: new Promise<FakeReply>((resolve) => { held.push(() => resolve(answer)); }) };
    });
    const workers = await Promise.all([startWorker(), startWorker(), startWorker()]);
    for (let s = 0; s < SESSIONS; s++) await producer.submitInbound(inbound(s, 0));
    // Twice: hold the calls in flight, kill two workers while they wait (some after a committed tool
    // round), start two more, let the held calls go; the second time after three more calls. The
    // later messages come after the first kill, so work is left for the second however the first
    // messages were batched into turns.
    for (let round = 0; round < 2; round++) {
      await pollUntil(() => held.length >= 2, { timeoutMs: 60_000, what: 'two calls held' });
      const victims = workers.splice(0, 2);
      await Promise.all(victims.map((victim) => {
        victim.kill('SIGKILL');
        return once(victim, 'exit');
      }));
      workers.push(...await Promise.all([startWorker(), startWorker()]));
      if (round === 0) {
        for (let m = 1; m < MESSAGES; m++) {
          for (let s = 0; s < SESSIONS; s++) await producer.submitInbound(inbound(s, m));
        }
      }
      holdAfter = round === 0 ? calls + 3 : Infinity;
      for (const release of held.splice(0)) release({ content: 'too late' });
    }
    await out.waitFor((replies) => covered(replies) === SESSIONS * MESSAGES);
    await rig.turnsDrained(60_000);

    const reader = createUsageReader(t.redis, { keyPrefix: t.keyPrefix });
    const byChat = await reader.report({ since: '1d', by: 'chat' });
    const sum = { prompt: 0, completion: 0, cached: 0, calls: 0, costMicroUsd: 0 };
    for (let s = 0; s < SESSIONS; s++) {
      const sessionId = `web:c${s}`;
      const ledger = await readUsage(t.redis, sessionKeys(sessionId, t.keyPrefix));
      const rolled = byChat.groups.find((g) => g.key === sessionId)!.figures;
      expect(rolled.inputTokens + rolled.cachedTokens, sessionId).toBe(ledger.promptTokens + ledger.summaryPromptTokens);
      expect(rolled.outputTokens, sessionId).toBe(ledger.completionTokens + ledger.summaryCompletionTokens);
      expect(rolled.calls, sessionId).toBe(ledger.calls + ledger.summaryCalls);
      expect(Math.round(rolled.costUsd * 1e6), sessionId).toBe(ledger.costMicroUsd);
      // Each committed call left one assistant entry (a tool round or the answer), however often its
      // turn was retried; a retried turn may take messages that arrived meanwhile, and so add a round.
      const assistant = (await readTranscript(t.redis, sessionKeys(sessionId, t.keyPrefix))).filter((e) => e.type === 'message' && e.message.role === 'assistant');
      const replies = new Set(out.replies.filter((r) => r.chatId === `c${s}` && r.kind === 'reply').map((r) => r.id)).size;
      expect(ledger.calls, sessionId).toBe(assistant.length);
      // One answer per reply (none committed twice), each after at least one tool round.
      expect(assistant.filter((e) => e.type === 'message' && !(e.message.role === 'assistant' && e.message.tool_calls?.length)), sessionId).toHaveLength(replies);
      expect(ledger.calls, sessionId).toBeGreaterThanOrEqual(2 * replies);
      sum.prompt += ledger.promptTokens; sum.completion += ledger.completionTokens; sum.cached += ledger.cachedTokens; sum.calls += ledger.calls; sum.costMicroUsd += ledger.costMicroUsd;
    }
    expect(byChat.totals).toMatchObject({ inputTokens: sum.prompt - sum.cached, cachedTokens: sum.cached, outputTokens: sum.completion, calls: sum.calls, unpricedCalls: 0 });
    expect(Math.round(byChat.totals.costUsd * 1e6)).toBe(sum.costMicroUsd);
    const byUser = await reader.report({ since: '1d', by: 'user' });
    expect(byUser.totals).toEqual(byChat.totals);
    expect(byUser.groups.map((g) => g.key).sort()).toEqual(['web:u0', 'web:u1', 'web:u2', 'web:u3']);
    // The fake answered more calls than were committed: the killed workers' calls count nowhere.
    expect(fake.requests.length).toBeGreaterThanOrEqual(sum.calls);
  }, 240_000);
});

/** The first call of a turn asks for the time; the call after the tool result answers. */
function answerOf(messages: ChatMessage[]): FakeReply {
  if (messages[messages.length - 1]!.role !== 'tool') return { toolCalls: [{ name: 'current_time', arguments: {} }] };
  const session = /^s(\d+)/.exec(messageText(messages.find((m) => m.role === 'user')!))?.[1] ?? '?';
  return { content: `ack s${session} ${unanswered(messages).join(',')}` };
}

/** Message numbers of the user messages after the last assistant text answer. */
function unanswered(messages: ChatMessage[]): number[] {
  let start = messages.length;
  const isAnswer = (m: ChatMessage) => m.role === 'assistant' && !(m.tool_calls?.length);
  while (start > 0 && !isAnswer(messages[start - 1]!)) start--;
  return messages.slice(start).filter((m) => m.role === 'user').map((m) => Number(/m(\d+)$/.exec(messageText(m))?.[1]));
}

function inbound(session: number, seq: number): InboundMessage {
  return { id: `web:c${session}:${seq}`, channel: 'web', chatId: `c${session}`, userId: `u${session % 4}`, userName: 'U', text: `s${session} m${seq}`, attachments: [], receivedAt: Date.now() };
}

function covered(replies: OutboundMessage[]): number {
  const seen = new Set<string>();
  for (const reply of replies) {
    const match = /^ack s(\d+) ([\d,]+)$/.exec(reply.text);
    if (match) for (const seq of match[2]!.split(',')) seen.add(`${match[1]}:${seq}`);
  }
  return seen.size;
}
