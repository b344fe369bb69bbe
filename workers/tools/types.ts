import { z } from 'zod';
import type { ToolApproval } from '../../src/core/approval.js';
import type { ToolSchema } from '../../src/llm/client.js';
import type { StoredTranscriptEntry } from '../../src/redis/transcript.js';

/** The per-session notes ledger the `remember`/`forget` tools write (outside the projection). */
export interface NotesPort {
  list(): Promise<Record<string, string>>;
  set(key: string, text: string): Promise<void>;
  /** @returns false when there was no such note. */
  remove(key: string): Promise<boolean>;
}

/** What a tool may use while it runs. */
export interface ToolContext {
  sessionId: string;
  notes: NotesPort;
  /** Substring search over the session's full transcript, newest first. */
  searchTranscript(query: string, limit: number): Promise<StoredTranscriptEntry[]>;
  /** Asks the loop to compact (forced) before the next model call. */
  requestCompaction(focus?: string): void;
  /** Aborted when the tool times out. */
  signal: AbortSignal;
  now(): Date;
  /** The model's id of this call. */
  callId: string;
  /**
   * `<session>:<turn>:<call id>`, the same for every run of this call (a turn retried after a
   * crash resumes with the same calls): pass it to a remote API as its idempotency key.
   */
  idempotencyKey: string;
}

/** An image a tool returned: its type and its bytes in base64. */
export interface ToolImage {
  mimeType: string;
  data: string;
}

/**
 * What a tool returns when it has images besides its text (an MCP tool's image content). The
 * model reads the text as the tool result; the images follow the round's tool results as image
 * parts for a model that sees images, else as one-line placeholders.
 */
export class ToolResult {
  constructor(readonly text: string, readonly images: readonly ToolImage[] = []) {}
}

/** A tool: a name, a description, a zod schema and a function returning the result text. */
export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  /** `^[a-zA-Z0-9_-]{1,64}$` (the chat-completions rule). */
  name: string;
  description: string;
  schema: S;
  /**
   * JSON Schema of the arguments, sent to the model unchanged instead of `schema`'s (an MCP
   * server's `inputSchema`); `schema` then only checks what it can, the tool validates the rest.
   */
  parameters?: Record<string, unknown>;
  /** Timeout of one call in ms. Default: the registry's (30000). */
  timeoutMs?: number;
  /**
   * The tool acts on the world (a booking, a payment, an email). Its start is recorded before it
   * runs; when a crash leaves its outcome unknown (started, no result recorded), it is not run
   * again and the model is told so. Default false: a call without a recorded result runs again.
   */
  sideEffects?: boolean;
  /**
   * Whether a call needs the user's approval: `auto` runs it, `ask` asks the user in the chat first
   * (Approve / Always in this chat / Deny), `deny` never offers the tool to the model. Default `auto`;
   * the operator's `CHATGATE_TOOL_APPROVAL` rules override it.
   */
  approval?: ToolApproval;
  /**
   * Runs the tool; a string is sent as is, a {@link ToolResult} as its text and images, anything
   * else as JSON. Throwing becomes an error result.
   */
  run(args: z.infer<S>, context: ToolContext): Promise<unknown> | unknown;
}

/** Defines a tool with its argument type inferred from the schema. */
export function defineTool<S extends z.ZodType>(definition: ToolDefinition<S>): ToolDefinition<S> {
  return definition;
}

/** The chat-completions schema of a tool: its `parameters` as given, else zod 4 → JSON schema. */
export function toToolSchema(tool: ToolDefinition): ToolSchema {
  if (tool.parameters) return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.schema) as Record<string, unknown>;
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters } };
}
