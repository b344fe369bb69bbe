import { describe, expect, it } from 'vitest';
import { nameServerTools, TOOL_NAME_RULE } from '../../workers/tools/mcp/tool-names.js';
import { attachmentUrl } from '../../src/core/attachments.js';
import { toolImagesMessage } from '../../workers/tool-images.js';
import { TOOL_IMAGES_MARK } from '../../src/core/messages.js';
import { MAX_RESOURCE_CHARS, MAX_RESULT_IMAGE_BYTES, MAX_RESULT_IMAGES, McpToolError, toToolResult } from '../../workers/tools/mcp/results.js';

const toResultText = (result: Parameters<typeof toToolResult>[0]): string => toToolResult(result).text;

describe('MCP tool names', () => {
  it('gives the same names whatever the order, within the chat-completions rule', () => {
    const tools = [
      { server: 'fs', tool: 'read' }, { server: 'fs', tool: 'a.b' }, { server: 'fs', tool: 'a b' }, { server: 'my server', tool: 'x'.repeat(80) }, { server: 'fs', tool: 'calc' },
    ];
    const first = nameServerTools(tools, new Set(['mcp__fs__calc']));
    const second = nameServerTools([...tools].reverse(), new Set(['mcp__fs__calc']));
    expect([...first.names.entries()].sort()).toEqual([...second.names.entries()].sort());
    for (const name of first.names.values()) expect(name).toMatch(TOOL_NAME_RULE);
    expect(first.names.get('fs\u0000read')).toBe('mcp__fs__read');
    expect(first.renamed.map((r) => [r.tool, r.reason]).sort()).toEqual([['a b', 'collision'], ['a.b', 'collision'], ['calc', 'collision'], ['x'.repeat(80), 'too long']]);
    expect(new Set(first.names.values()).size).toBe(tools.length);
  });
});

describe('MCP results', () => {
  it('keeps text, bounds embedded resources, and marks binary content', () => {
    const long = 'r'.repeat(MAX_RESOURCE_CHARS + 10);
    const text = toResultText({
      content: [
        { type: 'text', text: 'hello' },
        { type: 'resource', resource: { uri: 'file:///a.txt', text: long } },
        { type: 'resource', resource: { uri: 'file:///a.bin', mimeType: 'application/zip', blob: 'AAAA' } },
        { type: 'resource_link', uri: 'file:///b.txt', name: 'b.txt' },
        { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
      ],
    });
    expect(text).toContain('hello\n[resource file:///a.txt]\n');
    expect(text).toContain('[… 10 more characters of this resource not shown]');
    expect(text).toContain('[resource file:///a.bin application/zip, 3 B of binary data: not shown to the model]');
    expect(text).toContain('[resource link: b.txt file:///b.txt]');
    expect(text).toContain('[audio audio/wav, 3 B: not played to the model]');
  });

  it('gives structured content as JSON unless the text carries it, and isError as an error', () => {
    expect(toResultText({ content: [], structuredContent: { temperature: 21 } })).toBe('{"temperature":21}');
    expect(toResultText({ content: [{ type: 'text', text: 'It is 21 degrees' }], structuredContent: { temperature: 21 } })).toBe('It is 21 degrees');
    expect(toResultText({ content: [{ type: 'text', text: 'warm' }], structuredContent: { temperature: 21 } })).toBe('warm\n{"temperature":21}');
    expect(() => toResultText({ content: [{ type: 'text', text: 'no such file' }], isError: true })).toThrow(new McpToolError('no such file'));
    expect(toResultText({ content: [] })).toBe('(the tool returned no content)');
  });
});

describe('MCP result images', () => {
  it('keeps the images a vision model takes: its types, bounded in size and count', () => {
    const png = { type: 'image' as const, mimeType: 'image/png', data: 'AAAA' };
    const result = toToolResult({ content: [
      { type: 'text', text: 'here' },
      { type: 'image', mimeType: 'image/tiff', data: 'AAAA' },
      { type: 'image', mimeType: 'image/png', data: 'A'.repeat(Math.ceil((MAX_RESULT_IMAGE_BYTES + 3) / 3) * 4) },
      ...Array.from({ length: MAX_RESULT_IMAGES + 2 }, () => png),
    ] });
    expect(result.images).toEqual(Array.from({ length: MAX_RESULT_IMAGES }, () => ({ mimeType: 'image/png', data: 'AAAA' })));
    // The text names each image: those given to the model by their number, the others as not shown.
    const lines = result.text.split('\n');
    expect(lines.slice(1, 3)).toEqual([expect.stringMatching(/^\[image image\/tiff, 3 B: not shown to the model\]$/), expect.stringMatching(/^\[image image\/png, [\d.]+ KB: not shown to the model\]$/)]);
    expect(lines.slice(3)).toEqual([
      ...Array.from({ length: MAX_RESULT_IMAGES }, (_, k) => `[image image/png, 3 B: image ${k + 1} of this call, after the tool results]`),
      '[image image/png, 3 B: not shown to the model]', '[image image/png, 3 B: not shown to the model]',
    ]);
    expect(toToolResult({ content: [{ type: 'text', text: 'no image' }] }).images).toEqual([]);
  });

  it('builds no message when no call returned an image, one user message for the round otherwise', () => {
    expect(toolImagesMessage([{ tool: 'a', callId: 'c1', images: [] }])).toBeNull();
    const jpeg = { id: 'x-0', mimeType: 'image/jpeg', fileName: 'c2-1' };
    const png = { id: 'x-1', mimeType: 'image/png', fileName: 'c2-2' };
    const message = toolImagesMessage([
      { tool: 'a', callId: 'c1', images: [] },
      { tool: 'b', callId: 'c2', images: [jpeg, png] },
    ]);
    expect(message).toEqual({ role: 'user', content: [
      { type: 'text', text: `${TOOL_IMAGES_MARK} Images returned by tool b (call c2), not sent by the user:` },
      { type: 'image_url', image_url: { url: attachmentUrl(jpeg) } },
      { type: 'image_url', image_url: { url: attachmentUrl(png) } },
    ] });
  });
});
