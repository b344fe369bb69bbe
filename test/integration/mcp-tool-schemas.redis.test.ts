/**
 * An MCP tool OpenAI refuses as the server describes it (an array that does not say what its items
 * are, a description over 1,024 characters: both common in MCP servers) must not make every request
 * of every chat fail: it is offered with `items: {}`, its description cut to the limit.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/core/inbound.js';
import { messageText } from '../../src/core/messages.js';
import type { FakeRequest } from '../fakes/openai-server.js';
import { mcpServers, TEST_SERVER } from '../helpers/mcp.js';
import { openWorkerRig, type WorkerRig } from '../helpers/worker-rig.js';

const message: InboundMessage = { id: 'web:schemas:1', channel: 'web', chatId: 'schemas', userId: 'u', userName: 'U', text: 'tag it', attachments: [], receivedAt: Date.now() };

describe('MCP tools in the request', () => {
  let rig: WorkerRig;

  beforeEach(async () => { rig = await openWorkerRig(); });
  afterEach(async () => { await rig.close(); });

  it('offers arrays without items with items: {} and a long description cut, so the provider takes the request and the tool runs', async () => {
    const { fake, producer, out } = rig;
    const result = (r: FakeRequest) => r.messages.find((m) => m.role === 'tool');
    fake.setHandler((r) => (result(r) ? { content: `Tool said: ${messageText(result(r)!)}` } : { toolCalls: [{ name: 'mcp__t__tagged', arguments: { tags: ['a', 'b'], either: null } }] }));
    await rig.start({ mcpServers: mcpServers({ t: { command: process.execPath, args: [TEST_SERVER, 'ok'], connectTimeoutMs: 30_000 } }) });
    await producer.submitInbound(message);
    await out.waitFor((replies) => replies.length >= 1);
    expect(out.replies[0]!.text).toBe('Tool said: called tagged');
    const offered = fake.requests[0]!.tools.find((tool) => (tool as { function: { name: string } }).function.name === 'mcp__t__tagged') as { function: { parameters: unknown } };
    const verbose = fake.requests[0]!.tools.find((tool) => (tool as { function: { name: string } }).function.name === 'mcp__t__verbose') as { function: { description: string } };
    expect(verbose.function.description).toMatch(/^Explains itself at length\. More detail/);
    expect(verbose.function.description.length).toBeLessThanOrEqual(1024);
    expect(offered.function.parameters).toEqual({
      type: 'object',
      properties: { tags: { type: 'array', description: 'Tags.', items: {} }, either: { anyOf: [{ type: ['array', 'null'], items: {} }, { type: 'string' }] }, fixed: { const: { type: 'array' } } },
    });
  });
});
