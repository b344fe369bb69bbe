/** Default gateway hygiene trigger, as a share of (window − output reserve). */
export const DEFAULT_HYGIENE_THRESHOLD = 0.85;
/** Default in-loop compressor trigger (the worker's), share of (window − output reserve). */
export const DEFAULT_COMPRESS_THRESHOLD = 0.5;
/** Hygiene never compacts a session with fewer messages than this. */
export const HYGIENE_MIN_MESSAGES = 4;

/** Input of {@link decideHygiene}. */
export interface HygieneInput {
  /** Messages in the session's projection. */
  messageCount: number;
  /** Size of the next request (last reported prompt tokens plus what was appended since). */
  requestTokens: number;
  /** The model's context window, in tokens. */
  contextWindow: number;
  /** Trigger as a share of (window − reserve). Default 0.85. */
  threshold?: number;
  /** Output reserve subtracted from the window before the threshold. Default 0. */
  reservedOutputTokens?: number;
}

/**
 * The gateway's pre-dispatch decision: compact when the session has at least 4 messages and the
 * next request is at or over the hygiene line.
 */
export function decideHygiene(input: HygieneInput): { compact: boolean; thresholdTokens: number } {
  const threshold = input.threshold ?? DEFAULT_HYGIENE_THRESHOLD;
  if (!(threshold > 0 && threshold <= 1)) throw new RangeError(`\`threshold\` must be in (0, 1] (got ${threshold})`);
  const thresholdTokens = Math.floor((input.contextWindow - (input.reservedOutputTokens ?? 0)) * threshold);
  return {
    compact: input.messageCount >= HYGIENE_MIN_MESSAGES && input.requestTokens >= thresholdTokens,
    thresholdTokens,
  };
}
