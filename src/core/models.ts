/**
 * Known models: context windows and list prices. Pure data and lookups; used by the configuration
 * (context window when `CHATGATE_CONTEXT_WINDOW` is unset) and by the usage ledger (estimated cost).
 */
import { unknownKeysText } from './option-checks.js';

/** The built-in offline demo model's name (`chatgate start --demo`): the default model when `CHATGATE_DEMO` is on. */
export const DEMO_MODEL = 'chatgate-demo';

/** USD per 1M tokens. `cachedInput` is the price of prompt tokens served from the provider's cache. */
export interface ModelPricing {
  input: number;
  output: number;
  cachedInput?: number;
}

/** What chatgate knows about one model family. */
export interface ModelInfo {
  /** Pattern as written in the table, e.g. `gpt-4.1*` (a trailing `*` matches any suffix). */
  pattern: string;
  /** Context window in tokens (prompt and completion together). */
  contextWindow: number;
  /** List price, when known (self-hosted models have none). */
  pricing?: ModelPricing;
}

/**
 * The table, most specific first: the first pattern that matches wins. Prices are OpenAI list
 * prices per 1M tokens; open-weight models served by Ollama, vLLM and the like have no price.
 */
export const KNOWN_MODELS: readonly ModelInfo[] = Object.freeze([
  { pattern: 'gpt-4o-mini*', contextWindow: 128_000, pricing: { input: 0.15, output: 0.6, cachedInput: 0.075 } },
  { pattern: 'gpt-4o*', contextWindow: 128_000, pricing: { input: 2.5, output: 10, cachedInput: 1.25 } },
  { pattern: 'gpt-4.1-nano*', contextWindow: 1_047_576, pricing: { input: 0.1, output: 0.4, cachedInput: 0.025 } },
  { pattern: 'gpt-4.1-mini*', contextWindow: 1_047_576, pricing: { input: 0.4, output: 1.6, cachedInput: 0.1 } },
  { pattern: 'gpt-4.1*', contextWindow: 1_047_576, pricing: { input: 2, output: 8, cachedInput: 0.5 } },
  { pattern: 'gpt-5-nano*', contextWindow: 400_000, pricing: { input: 0.05, output: 0.4, cachedInput: 0.005 } },
  { pattern: 'gpt-5-mini*', contextWindow: 400_000, pricing: { input: 0.25, output: 2, cachedInput: 0.025 } },
  { pattern: 'gpt-5*', contextWindow: 400_000, pricing: { input: 1.25, output: 10, cachedInput: 0.125 } },
  { pattern: 'o4-mini*', contextWindow: 200_000, pricing: { input: 1.1, output: 4.4, cachedInput: 0.275 } },
  { pattern: 'o3-mini*', contextWindow: 200_000, pricing: { input: 1.1, output: 4.4, cachedInput: 0.55 } },
  { pattern: 'o3*', contextWindow: 200_000, pricing: { input: 2, output: 8, cachedInput: 0.5 } },
  { pattern: 'gpt-4-turbo*', contextWindow: 128_000, pricing: { input: 10, output: 30 } },
  { pattern: 'gpt-4-32k*', contextWindow: 32_768, pricing: { input: 60, output: 120 } },
  { pattern: 'gpt-4', contextWindow: 8_192, pricing: { input: 30, output: 60 } },
  { pattern: 'gpt-4-0613', contextWindow: 8_192, pricing: { input: 30, output: 60 } },
  { pattern: 'gpt-3.5-turbo*', contextWindow: 16_385, pricing: { input: 0.5, output: 1.5 } },
  { pattern: 'llama3.1*', contextWindow: 131_072 },
  { pattern: 'llama3.2*', contextWindow: 131_072 },
  { pattern: 'llama3.3*', contextWindow: 131_072 },
  { pattern: 'qwen2.5*', contextWindow: 32_768 },
  { pattern: 'mistral-nemo*', contextWindow: 131_072 },
  { pattern: 'mistral*', contextWindow: 32_768 },
  // The built-in offline demo model (`chatgate start --demo`): a small window so compaction shows. No
  // list price: `start --demo` prices it at $0 itself (src/cli/run.ts, it is free), so only token limits trip.
  { pattern: DEMO_MODEL, contextWindow: 8_192 },
]);

/** Token counts of one or more calls, as the provider reported them. */
export interface UsageTokens {
  /** Prompt tokens, cached ones included. */
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from the provider's cache (a subset of `promptTokens`). */
  cachedTokens?: number;
}

/**
 * The table entry of a model, or undefined for an unknown one. Case-insensitive; a provider prefix
 * (`openai/gpt-4o`) and an Ollama-style tag (`llama3.1:8b`) are ignored.
 */
export function lookupModel(model: string): ModelInfo | undefined {
  const name = normaliseModelName(model);
  return KNOWN_MODELS.find((entry) => matches(entry.pattern, name));
}

/** Estimated cost in USD of the given usage at the given prices; cached prompt tokens at the cached price. */
export function estimateCostUsd(pricing: ModelPricing | undefined, usage: UsageTokens): number {
  if (!pricing) return 0;
  const cached = Math.min(usage.cachedTokens ?? 0, usage.promptTokens);
  const uncached = usage.promptTokens - cached;
  const cachedPrice = pricing.cachedInput ?? pricing.input;
  return (uncached * pricing.input + cached * cachedPrice + usage.completionTokens * pricing.output) / 1_000_000;
}

/** Price overrides and additions by model name or table-style pattern (`my-model*`), USD per 1M tokens. */
export type PriceTable = Readonly<Record<string, ModelPricing>>;

/**
 * The price of `model`: `prices` first (an exact name, then a pattern with a trailing `*`; case, a
 * provider prefix and an Ollama tag are ignored, as in the table), else the table. Undefined when unknown: "price unknown", never $0.
 */
export function pricingOf(model: string, prices: PriceTable = {}): ModelPricing | undefined {
  const name = normaliseModelName(model);
  const exact = prices[model] ?? prices[name] ?? Object.entries(prices).find(([key]) => !key.endsWith('*') && normaliseModelName(key) === name)?.[1];
  if (exact) return exact;
  const pattern = Object.keys(prices).find((key) => key.endsWith('*') && matches(normaliseModelName(key.slice(0, -1)) + '*', name));
  return pattern ? prices[pattern] : lookupModel(model)?.pricing;
}

/** The fields of a prices file entry. */
const PRICE_FIELDS = ['input', 'output', 'cachedInput'] as const;

/**
 * Validates a prices file (`CHATGATE_PRICES`): an object of model name → `{ input, output, cachedInput? }`,
 * each a number ≥ 0 in USD per 1M tokens. Names are matched as models are (case-insensitively), so
 * two names that differ in case only are refused. @returns the table, or the problems found, each
 * naming the entry and the field.
 */
export function parsePriceTable(value: unknown): { prices: PriceTable } | { issues: string[] } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { issues: ['must be a JSON object of model name → { "input": n, "output": n, "cachedInput": n }'] };
  const issues: string[] = [];
  const prices: Record<string, ModelPricing> = {};
  const seen = new Map<string, string>();
  for (const [model, entry] of Object.entries(value as Record<string, unknown>)) {
    const problem = priceEntryIssue(entry);
    const same = seen.get(model.toLowerCase());
    if (problem) issues.push(`"${model}": ${problem}`);
    else if (same !== undefined) issues.push(`"${model}": the same model as "${same}" (names are matched case-insensitively)`);
    else {
      const record = entry as Record<string, number>;
      prices[model] = { input: record.input!, output: record.output!, ...(record.cachedInput !== undefined ? { cachedInput: record.cachedInput } : {}) };
    }
    seen.set(model.toLowerCase(), model);
  }
  return issues.length > 0 ? { issues } : { prices };
}

/** What is wrong with one entry of a prices file, or undefined. */
function priceEntryIssue(entry: unknown): string | undefined {
  const shape = 'must be { "input": n, "output": n, "cachedInput"?: n } with numbers ≥ 0 (USD per 1M tokens)';
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return `${shape} (got ${JSON.stringify(entry)})`;
  const record = entry as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !(PRICE_FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0) return `${unknownKeysText(unknown, PRICE_FIELDS)}; the keys are ${PRICE_FIELDS.join(', ')}`;
  const bad = PRICE_FIELDS.filter((field) => (field !== 'cachedInput' || record[field] !== undefined) && !(typeof record[field] === 'number' && Number.isFinite(record[field]) && record[field] >= 0));
  return bad.length > 0 ? `${shape}; bad: ${bad.map((field) => `\`${field}\` (got ${JSON.stringify(record[field]) ?? 'none'})`).join(', ')}` : undefined;
}

function normaliseModelName(model: string): string {
  const lower = model.trim().toLowerCase();
  const withoutProvider = lower.includes('/') ? lower.slice(lower.lastIndexOf('/') + 1) : lower;
  const colon = withoutProvider.indexOf(':');
  return colon >= 0 ? withoutProvider.slice(0, colon) : withoutProvider;
}

function matches(pattern: string, name: string): boolean {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

/**
 * Model families known to accept images (`image_url` content parts), as patterns like the table's
 * (a trailing `*` matches any suffix; case, a provider prefix and an Ollama tag are ignored).
 * `CHATGATE_VISION=true|false` overrides this for any model.
 */
export const VISION_MODELS: readonly string[] = Object.freeze([
  'gpt-4o*', 'gpt-4.1*', 'gpt-4.5*', 'gpt-5*', 'o1', 'o1-2*', 'o3', 'o3-2*', 'o3-pro*', 'o4-mini*', 'gpt-4-turbo*', 'gpt-4-vision*',
  'chatgpt-4o*', 'claude-*', 'gemini-*', 'gemma3*', 'llava*', 'bakllava*', 'llama3.2-vision*', 'llama4*', 'minicpm-v*', 'moondream*',
  'qwen2-vl*', 'qwen2.5-vl*', 'qwen2.5vl*', 'qwen3-vl*', 'qwen-vl*', 'pixtral*', 'mistral-small-3.1*', 'mistral-medium*', 'grok-*vision*', 'grok-4*', 'internvl*',
]);

/** Whether `model` accepts images: `override` when set (CHATGATE_VISION), else the {@link VISION_MODELS} table. */
export function supportsVision(model: string, override?: boolean): boolean {
  if (override !== undefined) return override;
  const name = normaliseModelName(model);
  return VISION_MODELS.some((pattern) => matchesGlob(pattern, name));
}

/** Like the table's patterns, with `*` allowed inside too (`grok-*vision*`). */
function matchesGlob(pattern: string, name: string): boolean {
  if (!pattern.slice(0, -1).includes('*')) return matches(pattern, name);
  const re = new RegExp(`^${pattern.split('*').map((piece) => piece.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return re.test(name);
}

/** Token usage of one model call, as the provider reported it. */
export interface CallUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}
