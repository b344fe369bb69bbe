import { afterEach, describe, expect, it } from 'vitest';
import type { SessionDetail } from '../../src/core/session-view.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { startFakeTelegram, type FakeTelegramServer } from '../fakes/telegram-server.js';
import { prose } from '../helpers/histories.js';
import type { Stack } from '../helpers/stack.js';
import { startTelegramStack } from '../helpers/telegram-stack.js';
import { waitUntil } from '../helpers/waits.js';

let telegram: FakeTelegramServer;
let stack: Stack;

afterEach(async () => {
  await stack.close();
  await telegram.close();
});

const NOTICE = /^Compacted the earlier conversation to keep it within the model's window \(([\d,]+) → ([\d,]+) tokens?\)\.$/;

/** A stack on an 8,000-token window; each answer is about 1,000 tokens. */
async function start(env: Record<string, string>): Promise<Stack> {
  telegram = await startFakeTelegram();
  stack = await startTelegramStack(telegram, {
    env: { CHATGATE_CONTEXT_WINDOW: '8000', ...env },
    handler: (request) => ({ content: `Answer ${request.index}: ${prose(1000, String(request.index))}` }),
  });
  return stack;
}

/** Sends `count` questions, each after the previous answer arrived. @returns every text the bot sent. */
async function converse(count: number): Promise<string[]> {
  const texts = () => telegram.callsOf('sendMessage').map((c) => String(c.params.text));
  const answers = () => texts().filter((t) => t.startsWith('Answer ')).length;
  for (let i = 0; i < count; i++) {
    const before = answers();
    telegram.pushMessage({ text: `question ${i}: ${prose(80, `q${i}`)}`, chat: { id: 42, type: 'private' } });
    await waitUntil(telegram, 'call', () => answers() > before);
  }
  await stack.gateway.ingest.idle();
  return texts();
}

async function compactions(layer: string): Promise<Array<{ tokensBefore: number; tokensAfter: number; requestTokens?: number }>> {
  const transcript = await readTranscript(stack.t.redis, sessionKeys('telegram:42', stack.t.keyPrefix));
  return transcript.flatMap((e) => (e.type === 'compaction' && e.layer === layer && e.outcome !== 'noop' && e.outcome !== 'aborted' ? [e] : []));
}

describe('automatic compaction notice', () => {
  it('the in-loop compressor tells the user once per compaction, with its figures', async () => {
    await start({ CHATGATE_THRESHOLD: '0.5' });
    const texts = await converse(7);
    const done = await compactions('in-loop');
    expect(done.length).toBeGreaterThan(0);
    const notices = texts.filter((t) => NOTICE.test(t));
    expect(notices).toHaveLength(done.length);
    // One measure everywhere: the whole request the trigger compared with its line, in the notice and on the dashboard.
    const figures = notices.map((t) => NOTICE.exec(t)!.slice(1).map((n) => Number(n.replace(/,/g, ''))));
    expect(figures.map(([before]) => before)).toEqual(done.map((e) => e.requestTokens));
    const detail = (await (await fetch(`${stack.gateway.httpUrl}/api/sessions/telegram:42`)).json()) as SessionDetail;
    const shown = detail.compactions.filter((c) => c.layer === 'in-loop' && c.outcome !== 'noop' && c.outcome !== 'aborted');
    expect(shown.map((c) => [c.requestTokensBefore, c.requestTokensAfter])).toEqual(figures);
    // The trigger fired at or over its line: the marker's "before" is not below it.
    for (const c of shown) expect(c.requestTokensBefore / detail.context.usableWindow).toBeGreaterThanOrEqual(detail.context.compressAt);
    expect(texts.some((t) => /noop|head and tail/.test(t))).toBe(false);
  });

  it('gateway hygiene tells the user once; CHATGATE_COMPACTION_NOTICE=false keeps hygiene and the in-loop compressor quiet', async () => {
    // The worker compacts at 80% (6,400), so that only hygiene (85%, 6,800) can act here.
    await start({ CHATGATE_THRESHOLD: '0.8' });
    const texts = await converse(7);
    expect(await compactions('hygiene')).toHaveLength(1);
    expect(texts.filter((t) => NOTICE.test(t))).toHaveLength(1);
    await stack.close();
    await telegram.close();

    await start({ CHATGATE_THRESHOLD: '0.8', CHATGATE_COMPACTION_NOTICE: 'false' });
    const quiet = await converse(7);
    expect(await compactions('hygiene')).toHaveLength(1);
    expect(quiet.filter((t) => t.startsWith('Compacted'))).toHaveLength(0);
    await stack.close();
    await telegram.close();

    await start({ CHATGATE_THRESHOLD: '0.5', CHATGATE_COMPACTION_NOTICE: 'false' });
    const quietInLoop = await converse(7);
    expect((await compactions('in-loop')).length).toBeGreaterThan(0);
    expect(quietInLoop.filter((t) => t.startsWith('Compacted'))).toHaveLength(0);
  });
});
