import { approvalFor, type ApprovalRule, type ToolApproval } from '../../src/core/approval.js';
import type { ToolCall } from '../../src/core/messages.js';
import type { ToolSchema } from '../../src/llm/client.js';
import { BUILTIN_TOOLS } from './builtins.js';
import { toToolSchema, ToolResult, type ToolContext, type ToolDefinition } from './types.js';

/** Default timeout of one tool call in ms. */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The tools offered to the model. Every failure (unknown tool, malformed arguments, a throw, a
 * timeout) becomes a result text starting with `Error:` that the model can read.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();
  private schemaCache: ToolSchema[] | null = null;

  /**
   * @param tools initial tools; default the built-ins.
   * @param approvalRules the operator's rules (`CHATGATE_TOOL_APPROVAL`), ahead of each tool's own `approval`.
   */
  constructor(tools: readonly ToolDefinition[] = BUILTIN_TOOLS, private readonly defaultTimeoutMs = DEFAULT_TOOL_TIMEOUT_MS, private readonly approvalRules: readonly ApprovalRule[] = []) {
    for (const tool of tools) this.register(tool);
  }

  /** Adds or replaces a tool. @throws Error when the name breaks the chat-completions rule. */
  register(tool: ToolDefinition): this {
    if (!NAME.test(tool.name)) throw new Error(`tool name must match ${NAME} (got ${tool.name})`);
    this.tools.set(tool.name, tool);
    this.schemaCache = null;
    return this;
  }

  /** Removes a tool. @returns whether it existed. */
  unregister(name: string): boolean {
    this.schemaCache = null;
    return this.tools.delete(name);
  }

  /** The names of the tools registered now. */
  names(): string[] {
    return [...this.tools.keys()];
  }

  /** Whether tool `name` declared side effects (unknown tools have none). */
  hasSideEffects(name: string): boolean {
    return this.tools.get(name)?.sideEffects === true;
  }

  /**
   * The policy of tool `name`: the operator's first matching rule, else the tool's `approval`, else
   * `auto`. A name no tool has is `auto`: its call runs nothing (it fails as unknown), so no one is
   * asked to approve a tool the model made up (`*=ask`).
   */
  approvalOf(name: string): ToolApproval {
    const tool = this.tools.get(name);
    return tool ? approvalFor(name, this.approvalRules, tool.approval) : 'auto';
  }

  /** The tool schemas for the request: every tool but those whose policy is `deny`. */
  schemas(): ToolSchema[] {
    this.schemaCache ??= [...this.tools.values()].filter((tool) => this.approvalOf(tool.name) !== 'deny').map(toToolSchema);
    return this.schemaCache;
  }

  /**
   * Runs one tool call and returns its result (its text, and the images the tool returned); never
   * throws. A side-effecting call that times out is said to have an unknown outcome, as after a crash. `signal` (the turn's `/stop`) aborts the tool's own signal and ends the wait for it at once.
   */
  async execute(call: ToolCall, context: Omit<ToolContext, 'signal'>, signal?: AbortSignal): Promise<ToolResult> {
    return this.run(call, context, signal).then((result) => (typeof result === 'string' ? new ToolResult(result) : result));
  }

  private async run(call: ToolCall, context: Omit<ToolContext, 'signal'>, signal?: AbortSignal): Promise<string | ToolResult> {
    const name = call.function.name;
    const tool = this.approvalOf(name) === 'deny' ? undefined : this.tools.get(name);
    if (!tool) return `Error: unknown tool "${name}". Available tools: ${this.schemas().map((schema) => schema.function.name).join(', ')}.`;
    let raw: unknown;
    try {
      raw = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
    } catch (err) {
      return `Error: the arguments of ${name} are not valid JSON (${(err as Error).message}). Send a JSON object.`;
    }
    const parsed = tool.schema.safeParse(raw);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
      return `Error: invalid arguments for ${name}: ${issues}`;
    }
    return this.runWithTimeout(tool, parsed.data, context, signal);
  }

  private async runWithTimeout(tool: ToolDefinition, args: unknown, context: Omit<ToolContext, 'signal'>, stop?: AbortSignal): Promise<string | ToolResult> {
    if (stop?.aborted) return `Error: tool ${tool.name} was not run: the turn was stopped (/stop).`;
    const timeoutMs = tool.timeoutMs ?? this.defaultTimeoutMs;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    let onStop: (() => void) | undefined;
    const ended = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError'));
        // The tool may still be running, or have acted before it was abandoned: a model told only "timed out" calls it again.
        const unknown = tool.sideEffects ? `. It may or may not have taken effect; check its effect before calling it again (idempotency key ${context.idempotencyKey})` : '';
        reject(new Error(`timed out after ${timeoutMs} ms${unknown}`));
      }, timeoutMs);
      onStop = () => {
        controller.abort(stop?.reason);
        reject(new Error('stopped (/stop)'));
      };
      stop?.addEventListener('abort', onStop, { once: true });
    });
    try {
      const result = await Promise.race([Promise.resolve(tool.run(args, { ...context, signal: controller.signal })), ended]);
      return typeof result === 'string' || result instanceof ToolResult ? result : JSON.stringify(result ?? null);
    } catch (err) {
      return `Error: tool ${tool.name} failed: ${err instanceof Error ? err.message : String(err)}`;
    } finally {
      clearTimeout(timer);
      if (onStop) stop?.removeEventListener('abort', onStop);
    }
  }
}
