/**
 * Images an MCP tool returns (the real @modelcontextprotocol/server-everything's `get-tiny-image`)
 * stored as attachments and shown in the round's user message: inlined for a vision model, a
 * placeholder for any other (workers/tool-images.ts, workers/attachments.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOL_IMAGES_MARK } from '../../src/core/messages.js';
import { createSilentLogger } from '../../src/log.js';
import { createAttachmentReader } from '../../workers/attachments.js';
import { storeToolImages, toolImagesMessage } from '../../workers/tool-images.js';
import { McpConnection } from '../../workers/tools/mcp/connection.js';
import { toToolResult } from '../../workers/tools/mcp/results.js';
import { mcpServerEntry, mcpServers } from '../helpers/mcp.js';
import { createTestRedis, type TestRedis } from '../helpers/redis.js';

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
