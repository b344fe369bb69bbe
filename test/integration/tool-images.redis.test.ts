/**
 * Images an MCP tool returns (the real @modelcontextprotocol/server-everything's `get-tiny-image`)
 * stored as attachments and shown in the round's user message: inlined for a vision model, a
 * placeholder for any other (workers/tool-images.ts, workers/attachments.ts). Then through a
 * worker and the fake OpenAI server: what the model's next request holds, what the turn commits,
 * and a round resumed from its step log.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { lastExchange } from '../../src/core/last-exchange.js';
import { parseAttachmentUrl } from '../../src/core/attachments.js';
import { TOOL_IMAGES_MARK, type ChatMessage, type ContentPart } from '../../src/core/messages.js';
import { TokenCounter } from '../../src/core/tokens.js';
import { createSilentLogger } from '../../src/log.js';
import type { TurnProducer } from '../../src/queue/producer.js';
import { claimInbox } from '../../src/redis/inbox.js';
import { attachmentKey, sessionKeys } from '../../src/redis/keys.js';
import { acquireLease, releaseLease } from '../../src/redis/lease.js';
import { createSessionStore, toEntry } from '../../src/redis/session-store.js';
import { createStepLog } from '../../src/redis/step-log.js';
import { readTranscript } from '../../src/redis/transcript.js';
import { createAttachmentReader } from '../../workers/attachments.js';
import { toUserMessage } from '../../workers/model-request.js';
import { storeToolImages, toolImagesMessage } from '../../workers/tool-images.js';
import { McpConnection } from '../../workers/tools/mcp/connection.js';
import { toToolResult } from '../../workers/tools/mcp/results.js';
import type { FakeOpenAI } from '../fakes/openai-server.js';
import { mcpServerEntry, mcpServers } from '../helpers/mcp.js';
import { createTestRedis, type OutboundCollector, type TestRedis } from '../helpers/redis.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

describe('tool-result images', () => {
  let t: TestRedis;
  let connection: McpConnection;

  beforeAll(async () => {
    t = createTestRedis();
    const [server] = mcpServers({ everything: { command: process.execPath, args: [mcpServerEntry('server-everything')] } });
    connection = new McpConnection(server!, { logger: createSilentLogger(), onTools: () => undefined }, { version: 'test' });
    await connection.start();
  }, 60_000);

  afterAll(async () => {
    await connection?.close();
    await t?.cleanup();
  });

  it('reach a vision model as image parts marked as tool output, any other model as a placeholder', async () => {
    const { images } = toToolResult(await connection.call('get-tiny-image', {}, {}));
    expect(images).toEqual([{ mimeType: 'image/png', data: expect.stringMatching(/^iVBORw0KGgo/) }]);
    const refs = await storeToolImages(t.redis, 'test:1', 'turn-1', 'call_1', images, { keyPrefix: t.keyPrefix, ttlSeconds: 60 });
    // A resumed round stores the same bytes under the same references.
    expect(await storeToolImages(t.redis, 'test:1', 'turn-1', 'call_1', images, { keyPrefix: t.keyPrefix, ttlSeconds: 60 })).toEqual(refs);
    const message = toolImagesMessage([{ tool: 'mcp__everything__get-tiny-image', callId: 'call_1', images: refs }])!;
    const reader = (vision: boolean) => createAttachmentReader({ redis: t.redis, keyPrefix: t.keyPrefix, log: createSilentLogger() }, { vision, maxDocumentChars: 1000 });

    const [seen] = await reader(true).inline('test:1', [message], new Map());
    expect(seen).toEqual({ role: 'user', content: [
      { type: 'text', text: `${TOOL_IMAGES_MARK} Images returned by tool mcp__everything__get-tiny-image (call call_1), not sent by the user:` },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${images[0]!.data}`, detail: 'auto' } },
    ] });

    const [blind] = await reader(false).inline('test:1', [message], new Map());
    expect(JSON.stringify(blind)).not.toContain('base64');
    expect(blind).toEqual({ role: 'user', content: [expect.objectContaining({ type: 'text' }), expect.objectContaining({ type: 'text' })] });
  });
});

const SESSION = 'web:img';
const TINY_IMAGE_TOOL = 'mcp__everything__get-tiny-image';
/** A 1×1 PNG, not the everything server's: a resumed round must show these bytes. */
const OTHER_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

describe('a worker whose MCP tool returns an image', () => {
  let rig: WorkerRig;
  let t: TestRedis;
  let fake: FakeOpenAI;
  let producer: TurnProducer;
  let out: OutboundCollector;

  beforeEach(async () => {
    // The model calls the image tool, then answers once it has a tool result.
    rig = await openWorkerRig((request) => (request.messages.some((m) => m.role === 'tool') ? { content: 'a tiny image' } : { toolCalls: [{ name: TINY_IMAGE_TOOL, arguments: {}, id: 'call_img' }] }));
    ({ t, fake, producer, out } = rig);
  });
  afterEach(() => rig.close());

  const start = async (options: { vision: boolean; mcp: boolean }): Promise<void> => {
    const servers = options.mcp ? mcpServers({ everything: { command: process.execPath, args: [mcpServerEntry('server-everything')], approval: 'auto', connectTimeoutMs: 60_000 } }) : [];
    await rig.start({ liveReplies: false, llm: { baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o-mini' }, attachments: { vision: options.vision, ttlSeconds: 600 }, mcpServers: servers });
  };
  const ask = async (): Promise<InboundMessage> => {
    const message: InboundMessage = { id: 'web:img:1', channel: 'web', chatId: 'img', userId: 'u', userName: 'U', text: 'show me a tiny image', attachments: [], receivedAt: Date.now() };
    await producer.submitInbound(message);
    await out.waitFor((replies) => replies.length === 1);
    expect(out.replies[0]).toMatchObject({ text: 'a tiny image' });
    return message;
  };
  /** The message after the round's tool result in the model's second request. */
  const shownAfterTool = (): ChatMessage | undefined => {
    const messages = fake.requests[1]!.messages;
    return messages[messages.findIndex((m) => m.role === 'tool') + 1];
  };

  it('gives a vision model the image as a data: URL after the tool result, and commits that message where the model saw it', async () => {
    await start({ vision: true, mcp: true });
    await ask();
    expect(fake.requests).toHaveLength(2);
    const tool = fake.requests[1]!.messages.find((m) => m.role === 'tool')!;
    expect(tool.content).toMatch(/\[image image\/png, [\d.]+ KB: image 1 of this call, after the tool results\]/);
    expect(shownAfterTool()).toEqual({ role: 'user', content: [
      { type: 'text', text: `${TOOL_IMAGES_MARK} Images returned by tool ${TINY_IMAGE_TOOL} (call call_img), not sent by the user:` },
      { type: 'image_url', image_url: { url: expect.stringMatching(/^data:image\/png;base64,iVBORw0KGgo[A-Za-z0-9+/]+=*$/), detail: 'auto' } },
    ] });

    const projection = (await createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix }).load(SESSION)).entries.map((entry) => entry.message);
    expect(projection.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant']);
    // The projection keeps a reference; the bytes stay in Redis for the configured time, like a user's image.
    const part = (projection[3]!.content as ContentPart[])[1]!;
    const ref = part.type === 'image_url' ? parseAttachmentUrl(part.image_url.url) : null;
    const ttl = await t.redis.ttl(attachmentKey(SESSION, ref!.id, t.keyPrefix));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600);
    // The user's message stays the exchange's ask.
    expect(lastExchange(projection)).toEqual({ start: 0, userTexts: ['show me a tiny image'], holdsSummary: false });
    const transcript = await readTranscript(t.redis, sessionKeys(SESSION, t.keyPrefix));
    expect(transcript.flatMap((entry) => (entry.type === 'message' ? [entry.message] : []))).toEqual(projection);
    expect(await t.redis.exists(sessionKeys(SESSION, t.keyPrefix).steps)).toBe(0);
  }, 120_000);

  it('gives a model without vision the placeholder instead', async () => {
    await start({ vision: false, mcp: true });
    await ask();
    expect(shownAfterTool()).toEqual({ role: 'user', content: [
      { type: 'text', text: expect.stringContaining(TOOL_IMAGES_MARK) },
      { type: 'text', text: '[chatgate:image] call_img-1 (this model cannot see images)' },
    ] });
    expect(JSON.stringify(fake.requests[1]!.messages)).not.toContain('base64');
  }, 120_000);

  it('rebuilds the images message of a round its step log recorded, without running the tool again', async () => {
    const keys = sessionKeys(SESSION, t.keyPrefix);
    const message: InboundMessage = { id: 'web:img:1', channel: 'web', chatId: 'img', userId: 'u', userName: 'U', text: 'show me a tiny image', attachments: [], receivedAt: Date.now() };
    await producer.submitInbound(message);
    // What a worker killed after the tool ran, before the round's commit, leaves behind.
    const fence = (await acquireLease(t.redis, keys, 5_000))!;
    await claimInbox(t.redis, keys);
    const store = createSessionStore({ redis: t.redis }, { keyPrefix: t.keyPrefix });
    await store.commit(SESSION, { expectedVersion: 0, fence, projection: { append: [toEntry(toUserMessage(message), new TokenCounter())] }, meta: { turnInboundIds: [message.id] } });
    const steps = createStepLog(t.redis, { keys, turnId: message.id, fence });
    const call = { id: 'call_img', type: 'function' as const, function: { name: TINY_IMAGE_TOOL, arguments: '{}' } };
    await steps.recordAnswer({ message: { role: 'assistant', content: null, tool_calls: [call] }, usage: null, finishReason: 'tool_calls', model: 'gpt-4o-mini' });
    await steps.recordStarted(call.id);
    const refs = await storeToolImages(t.redis, SESSION, message.id, call.id, [{ mimeType: 'image/png', data: OTHER_PNG }], { keyPrefix: t.keyPrefix, ttlSeconds: 60 });
    await steps.recordResult(call.id, 'recorded result with one image', refs);
    await releaseLease(t.redis, keys, fence);

    // No MCP server at all: the tool cannot run; the recorded round is all there is.
    await start({ vision: true, mcp: false });
    await out.waitFor((replies) => replies.length === 1);
    expect(fake.requests).toHaveLength(1);
    const messages = fake.requests[0]!.messages;
    const toolIndex = messages.findIndex((m) => m.role === 'tool');
    expect(messages[toolIndex]).toEqual({ role: 'tool', tool_call_id: 'call_img', content: 'recorded result with one image' });
    expect(messages[toolIndex + 1]).toEqual({ role: 'user', content: [
      expect.objectContaining({ type: 'text' }), { type: 'image_url', image_url: { url: `data:image/png;base64,${OTHER_PNG}`, detail: 'auto' } },
    ] });
  }, 120_000);
});
