/**
 * A real `chatgate worker` process with CHATGATE_MCP_CONFIG naming @modelcontextprotocol/server-filesystem
 * on one folder, the fake OpenAI server calling `mcp__filesystem__read_file`: the reply carries the
 * file's text, the tool schemas count in the request size, `chatgate status` lists the server per
 * worker, and the stdio server dies with the worker (SIGKILL).
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import type { StatusReport } from '../../src/cli/status-report.js';
import { countTextTokens } from '../../src/llm/encodings.js';
import { createTurnProducer, type TurnProducer } from '../../src/queue/producer.js';
import { createSessionStore } from '../../src/redis/session-store.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai-server.js';
import { runChatgate } from '../helpers/cli-process.js';
import { spawnCliWorker, startModelsFront } from '../helpers/cli-worker.js';
import { mcpServerEntry } from '../helpers/mcp.js';
import { collectOutbound, createTestRedis, type OutboundCollector, type TestRedis } from '../helpers/redis.js';

const SECRET_NOTE = 'the spare key is under the blue pot, code ORD-48213-XK';

/** The pids of processes whose command line contains `text` (the folder only this test's server was given). */
function pidsWith(text: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', text], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

describe('a worker with an MCP server', () => {
  let t: TestRedis;
  let llm: FakeOpenAI;
  let front: { baseURL: string; close(): Promise<void> };
  let worker: ChildProcess | undefined;
  let producer: TurnProducer;
  let out: OutboundCollector;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = createTestRedis();
    dir = mkdtempSync(join(tmpdir(), 'cg-mcp-e2e-'));
    writeFileSync(join(dir, 'notes.txt'), SECRET_NOTE);
    const config = join(dir, 'chatgate.mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { filesystem: { command: process.execPath, args: [mcpServerEntry('server-filesystem'), dir] } } }));
    llm = await startFakeOpenAI((request) => {
      const result = request.messages.find((message) => message.role === 'tool');
      if (!result) return { toolCalls: [{ name: 'mcp__filesystem__read_file', arguments: { path: join(dir, 'notes.txt') } }] };
      return { content: `The file says: ${String(result.content)}` };
    });
    front = await startModelsFront(llm.baseURL);
    worker = await spawnCliWorker({ redisUrl: t.url, keyPrefix: t.keyPrefix, queuePrefix: t.queuePrefix, baseURL: front.baseURL, env: { CHATGATE_MCP_CONFIG: config, CHATGATE_STREAMING: 'false' } });
    env = {
      REDIS_URL: t.url, CHATGATE_KEY_PREFIX: t.keyPrefix, CHATGATE_QUEUE_PREFIX: t.queuePrefix, OPENAI_BASE_URL: front.baseURL, OPENAI_API_KEY: 'test-key',
      CHATGATE_MODEL: 'gpt-4o-mini', CHATGATE_CONTEXT_WINDOW: '16000', CHATGATE_MCP_CONFIG: config,
    };
    producer = createTurnProducer({ redis: t.redis }, { keyPrefix: t.keyPrefix, ...t.names });
    out = await collectOutbound(t);
  }, 180_000);

  afterAll(async () => {
    if (worker && worker.exitCode === null && worker.signalCode === null) {
      worker.kill('SIGTERM');
      await once(worker, 'exit');
    }
    await out?.close();
    await producer?.close();
    await front?.close();
    await llm?.close();
    await t?.cleanup();
  });

  it('answers with the text of a file the model read through mcp__filesystem__read_file', async () => {
    const message: InboundMessage = { id: 'web:c1:1', channel: 'web', chatId: 'c1', userId: 'u1', userName: 'Ann', text: 'what does notes.txt say?', attachments: [], receivedAt: Date.now() };
    await producer.submitInbound(message);
    await out.waitFor((replies) => replies.length === 1);
    expect(out.replies[0]!.text).toBe(`The file says: ${SECRET_NOTE}`);
    const offered = (llm.requests[0]!.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name);
    expect(offered).toEqual(expect.arrayContaining(['mcp__filesystem__read_file', 'mcp__filesystem__write_file', 'calculator']));
    // The servers' schemas count in the request size both compaction triggers read.
    const schemaTokens = countTextTokens(JSON.stringify(llm.requests[0]!.tools), 'gpt-4o-mini');
    const snapshot = await createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix }).load('web:c1');
    expect(snapshot.meta.overheadTokens).toBeGreaterThanOrEqual(schemaTokens);
  });

  it('lists the server per worker in chatgate status', async () => {
    const result = await runChatgate(['status', '--json'], env);
    const report = JSON.parse(result.stdout) as StatusReport;
    const check = report.checks.find((c) => c.name === 'mcp');
    expect(check).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^filesystem on \S+ pid \d+: connected, 14 tools$/) });
  });

  it('takes its stdio server down with it when killed', async () => {
    expect(pidsWith(dir).length).toBeGreaterThan(0);
    worker!.kill('SIGKILL');
    await once(worker!, 'exit');
    await vi.waitFor(() => expect(pidsWith(dir)).toEqual([]), { timeout: 10_000, interval: 100 });
  });
});
