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
  countMessageTokens,
  countTextTokens,
  decideHygiene,
  extractFacts,
  sessionKeyOf,
} from './core/index.js';
export { GatewayError, ConfigError, ChannelError, LlmError, StaleCommitError } from './errors.js';
export { createLogger } from './log.js';
export { createMemoryMetrics, NOOP_METRICS } from './metrics.js';
export type { DeliveryFailureReason, MetricEvent, Metrics, ModelCallOutcome } from './metrics.js';
export { defineTool } from '../workers/tools/types.js';
export type { ToolContext, ToolDefinition, NotesPort } from '../workers/tools/types.js';
