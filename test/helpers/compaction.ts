import { ContextCompressor, createCompactionState, type ChatMessage, type CompactionResult, type CompactionState, type CompressOptions } from '../../src/index.js';

/** A compressor bound to one session: each call gets the state the previous call returned, as a worker would store it. */
export interface ChainedCompressor {
  readonly compressor: ContextCompressor;
  readonly thresholdTokens: number;
  readonly limitTokens: number;
  state: CompactionState;
  shouldCompress(requestTokens: number): boolean;
  compress(messages: ChatMessage[], options?: CompressOptions): Promise<CompactionResult>;
}

/** Wraps a compressor (or its options) so that calls chain one session's state. */
export function chained(compressorOrOptions: ContextCompressor | ConstructorParameters<typeof ContextCompressor>[0]): ChainedCompressor {
  const compressor = compressorOrOptions instanceof ContextCompressor ? compressorOrOptions : new ContextCompressor(compressorOrOptions);
  const session: ChainedCompressor = {
    compressor,
    thresholdTokens: compressor.thresholdTokens,
    limitTokens: compressor.limitTokens,
    state: createCompactionState(),
    shouldCompress: (requestTokens) => compressor.shouldCompress(requestTokens, session.state),
    async compress(messages, options = {}) {
      const result = await compressor.compress(messages, { state: session.state, ...options });
      session.state = result.state;
      return result;
    },
  };
  return session;
}
