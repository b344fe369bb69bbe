import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js';
import { truncateText } from '../../../src/core/text.js';
import { ToolResult } from '../types.js';

/** Characters of one embedded resource kept in the result (the whole result is capped later by the tool-result cap). */
export const MAX_RESOURCE_CHARS = 20_000;

/** Images of one tool result a vision model is given at most (the rest keep their placeholder only). */
export const MAX_RESULT_IMAGES = 4;

/** Decoded bytes one tool-result image may have to be given to a vision model. */
export const MAX_RESULT_IMAGE_BYTES = 4 * 1024 * 1024;

/** Image types chat-completions endpoints take as `image_url` data URLs. */
const VISION_MIME = /^image\/(jpeg|png|gif|webp)$/;

/**
 * The tool result of an MCP call for the model. Its text: text blocks as they are, embedded
 * resources as bounded text, images, audio and binary resources as a one-line placeholder, resource
 * links as a line, `structuredContent` as JSON (unless the text blocks already carry it: its JSON,
 * or every string and number in it). Its images: those a vision model may be given — of a type
 * chat-completions takes, at most {@link MAX_RESULT_IMAGE_BYTES} each, the first {@link MAX_RESULT_IMAGES}.
 * @throws McpToolError with the text when the result has `isError`.
 */
export function toToolResult(result: CallToolResult): ToolResult {
  const content = result.content ?? [];
  const shown = shownImages(content);
  const blocks = content.map((block, index) => blockText(block, shown.get(index)));
  const structured = result.structuredContent;
  // Servers often send the same data as text too: then the JSON would only double the tokens.
  if (structured !== undefined && !blocks.some((text) => sameJson(text, structured)) && !textsCarry(blocks.join('\n'), structured)) blocks.push(JSON.stringify(structured));
  const text = blocks.join('\n');
  if (result.isError) throw new McpToolError(text === '' ? 'the tool reported an error without a message' : text);
  const images = [...shown.keys()].map((index) => {
    const block = content[index] as ImageBlock;
    return { mimeType: block.mimeType, data: block.data };
  });
  return new ToolResult(text === '' ? '(the tool returned no content)' : text, images);
}

/** An MCP tool reported `isError`: its text is the error the model reads. */
export class McpToolError extends Error {}

type ImageBlock = Extract<ContentBlock, { type: 'image' }>;

/** The indices of the image blocks given to the model, each with its number among them (from 1), in order. */
function shownImages(content: readonly ContentBlock[]): Map<number, number> {
  const shown = new Map<number, number>();
  for (const [index, block] of content.entries()) {
    if (shown.size === MAX_RESULT_IMAGES) break;
    if (block.type !== 'image' || !VISION_MIME.test(block.mimeType) || decodedBytes(block.data) > MAX_RESULT_IMAGE_BYTES) continue;
    shown.set(index, shown.size + 1);
  }
  return shown;
}

/** The text of one block; `shown` is an image's number among those given to the model. */
function blockText(block: ContentBlock, shown: number | undefined): string {
  switch (block.type) {
    case 'text': return block.text;
    case 'image': return `[image ${block.mimeType}, ${sizeOf(block.data)}: ${shown === undefined ? 'not shown to the model' : `image ${shown} of this call, after the tool results`}]`;
    case 'audio': return `[audio ${block.mimeType}, ${sizeOf(block.data)}: not played to the model]`;
    case 'resource_link': return `[resource link: ${block.name} ${block.uri}${block.mimeType ? ` (${block.mimeType})` : ''}]`;
    case 'resource': {
      const resource = block.resource;
      if ('text' in resource && typeof resource.text === 'string') {
        const kept = truncateText(resource.text, MAX_RESOURCE_CHARS);
        const cut = kept.length < resource.text.length ? `\n[… ${resource.text.length - kept.length} more characters of this resource not shown]` : '';
        return `[resource ${resource.uri}]\n${kept}${cut}`;
      }
      const blob = 'blob' in resource && typeof resource.blob === 'string' ? resource.blob : '';
      return `[resource ${resource.uri}${resource.mimeType ? ` ${resource.mimeType}` : ''}, ${sizeOf(blob)} of binary data: not shown to the model]`;
    }
    default: return `[${(block as { type: string }).type} content: not shown to the model]`;
  }
}

/** Decoded size of base64 `data`. */
function decodedBytes(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
}

/** Decoded size of base64 `data`, readable. */
function sizeOf(data: string): string {
  const bytes = decodedBytes(data);
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`;
}

function textsCarry(text: string, value: unknown): boolean {
  if (text === '') return false;
  const leaves: string[] = [];
  const walk = (node: unknown): void => {
    if (typeof node === 'string' || typeof node === 'number') leaves.push(String(node));
    else if (node && typeof node === 'object') for (const child of Object.values(node)) walk(child);
  };
  walk(value);
  return leaves.length > 0 && leaves.every((leaf) => text.includes(leaf));
}

function sameJson(text: string, value: unknown): boolean {
  if (!/^\s*[{[]/.test(text)) return false;
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}
