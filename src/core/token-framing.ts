/** What a request costs beyond its texts' tokens: no tokenizer here (src/core/tokens.ts counts). */

/** Tokens every message costs beyond its content (role and separators), as OpenAI frames chat. */
export const MESSAGE_FRAMING_TOKENS = 4;
/** Tokens that prime the assistant's reply, added once per request. */
export const REPLY_PRIMING_TOKENS = 3;
/** Tokens charged per tool call beyond its name and arguments. */
export const TOOL_CALL_FRAMING_TOKENS = 8;
/**
 * Flat estimate for one image part: what a typical photo costs at `detail: auto` on OpenAI's
 * vision models (resized to 768 px on its short side: 4 tiles × 170 + 85). Only an estimate
 * until the call: the provider's reported usage is what the next request is counted from.
 */
export const IMAGE_PART_TOKENS = 765;
