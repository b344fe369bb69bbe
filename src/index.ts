/** The public library API of chatgate: named exports only. */
import { installEncodings } from './llm/encodings.js';

// The token counters of the API count for every model: GPT-3.5/4's table loads when a count first needs it.
installEncodings();

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
export { GatewayError, ConfigError, ChannelError, LlmError, StaleCommitError, StoredFormatError } from './errors.js';
export { createLogger } from './log.js';
export { createMemoryMetrics, NOOP_METRICS } from './metrics.js';
export type { DeliveryFailureReason, MetricEvent, Metrics, ModelCallOutcome } from './metrics.js';
export { defineTool } from '../workers/tools/types.js';
export type { ToolContext, ToolDefinition, NotesPort } from '../workers/tools/types.js';
