/**
 * A worker process killed mid-turn (SIGKILL) is noticed by another worker as soon as its heartbeat
 * lapses: its session lease is released and its turn job put back, so the turn is answered well
 * before the session lease and the queue lock (15 s and 30 s by default, left at their defaults
 * here) would run out. The recovery is logged with the dead worker's host and pid.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { sessionKeys } from '../../src/redis/keys.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { stopTurn } from '../../src/turn-stop/stop-command.js';
import type { FakeReply } from '../fakes/openai-server.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

describe('a worker killed mid-turn', () => {
  let rig: WorkerRig;
  beforeEach(async () => { rig = await openWorkerRig(); });
  afterEach(async () => { await rig.close(); });

  const startWorker = async (): Promise<{ child: ChildProcess; lines: Array<Record<string, unknown>> }> => {
    // A short heartbeat keeps the test quick; the lease and the queue lock keep their defaults.
    const child = await rig.spawnCliWorker({ CHATGATE_HEARTBEAT_TTL_MS: '1500' });
    const lines: Array<Record<string, unknown>> = [];
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch { /* not a log line */ }
    });
    return { child, lines };
  };

  it('is recovered by a live worker from its lapsed heartbeat: logged, answered once', async () => {
    let release: ((reply: FakeReply) => void) | null = null;
    let onHeld = (): void => undefined;
    const held = new Promise<void>((resolve) => { onHeld = resolve; });
    rig.fake.setHandler(() => {
      if (release === null) {
        onHeld();
        return { hold: new Promise<FakeReply>((resolve) => { release = resolve; }) };
      }
      return { content: 'recovered answer' };
    });
    const victim = await startWorker();
    await rig.producer.submitInbound(inbound('hello'));
    await held;
    const rescuer = await startWorker();
    victim.child.kill('SIGKILL');
    await once(victim.child, 'exit');

    await rig.out.waitFor((replies) => replies.length > 0);
    expect(rig.out.replies.map((r) => r.text)).toEqual(['recovered answer']);
    const noticed = rescuer.lines.find((line) => line.msg === 'worker stopped beating; recovering its turns');
    expect(noticed).toMatchObject({ pid: rescuer.child.pid, workerPid: victim.child.pid, turns: 1 });
    expect(noticed?.worker).toMatch(new RegExp(`:${victim.child.pid}:`));
    expect(rescuer.lines.some((line) => line.msg === 'turn of a dead worker put back for another worker' && line.sessionId === 'web:dw')).toBe(true);
    const keys = sessionKeys('web:dw', rig.t.keyPrefix);
    const assistant = (await readTranscript(rig.t.redis, keys)).filter((e) => e.type === 'message' && e.message.role === 'assistant');
    expect(assistant).toHaveLength(1);
    (release as ((reply: FakeReply) => void) | null)?.({ content: 'too late' });
  }, 180_000);

  it('a /stop sent while the dead worker still holds the session reaches the turn that resumes it: "Stopped.", no answer', async () => {
    let onHeld = (): void => undefined;
    const held = new Promise<void>((resolve) => { onHeld = resolve; });
    let calls = 0;
    rig.fake.setHandler(() => {
      calls += 1;
      if (calls === 1) {
        onHeld();
        return { hold: new Promise<FakeReply>(() => undefined) };
      }
      return { content: 'the full answer' };
    });
    const victim = await startWorker();
    await rig.producer.submitInbound(inbound('hello'));
    await held;
    victim.child.kill('SIGKILL');
    await once(victim.child, 'exit');
    // As the gateway's /stop does, while the dead worker's lease has not run out.
    expect(await stopTurn(rig.t.redis, 'web:dw', rig.t.keyPrefix)).toBeNull();
    await startWorker();
    await rig.out.waitFor((replies) => replies.length > 0);
    expect(rig.out.replies.map((r) => r.text)).toEqual([expect.stringMatching(/^Stopped\./)]);
  }, 180_000);
});

function inbound(text: string): InboundMessage {
  return { id: 'web:dw:1', channel: 'web', chatId: 'dw', userId: 'u', userName: 'U', text, attachments: [], receivedAt: Date.now() };
}
