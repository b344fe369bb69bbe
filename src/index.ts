/** The public library API of chatgate: named exports only. */
export type {
  ChatMessage,
  ToolCall,
  ContentPart,
  SummaryRequest,
  Summarizer,
  SummaryOutput,
  SummaryUsage,
  CompactionOutcome,
  CompactionState,
  CompressOptions,
  CompactionResult,
  CompressorOptions,
  HygieneInput,
  InboundMessage,
  OutboundMessage,
  ChannelName,
} from './core/index.js';
export {
  ContextCompressor,
  createCompactionState,
  toCompactionState,
  sanitizeToolPairs,
  decideHygiene,
  extractFacts,
  sessionKeyOf,
} from './core/index.js';
// Token counting for every model: GPT-3.5/4's table loads when a count first needs it.
export { createTokenCounter, countMessageTokens, countTextTokens } from './llm/encodings.js';
export { TokenCounter, type TokenCounterOptions, type EncodingName } from './core/index.js';
export { GatewayError, ConfigError, ChannelError, LlmError, StaleCommitError, StoredFormatError } from './errors.js';
export { createLogger } from './log.js';
export { createMemoryMetrics, NOOP_METRICS } from './metrics.js';
export type { DeliveryFailureReason, MetricEvent, Metrics, ModelCallOutcome } from './metrics.js';
export { defineTool, ToolResult } from '../workers/tools/types.js';
export type { ToolContext, ToolDefinition, ToolImage, NotesPort } from '../workers/tools/types.js';
