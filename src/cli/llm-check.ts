import { countOf } from '../core/plural.js';
import { truncateText } from '../core/text.js';
import type { Config } from '../config.js';
import { DEFAULT_OPENAI_BASE_URL } from '../config-options.js';

/** What a probe of the LLM endpoint found. */
export interface LlmProbe {
  ok: boolean;
  /** One line: what answered, or what failed and why. */
  detail: string;
  /** Model ids the endpoint lists (GET /models), when it lists them. */
  models?: string[];
}

/** True when neither an endpoint nor a key was configured: the defaults would only fail. */
export function isLlmUnconfigured(config: Pick<Config, 'llm'>): boolean {
  return config.llm.apiKey === undefined && config.llm.baseUrl === DEFAULT_OPENAI_BASE_URL;
}

/** The advice printed when the LLM endpoint does not answer. */
export const LLM_HELP =
  'Set OPENAI_BASE_URL to an OpenAI-compatible endpoint (default https://api.openai.com/v1; Ollama: http://127.0.0.1:11434/v1), ' +
  'OPENAI_API_KEY to its key and CHATGATE_MODEL to a model it serves (unknown models also need CHATGATE_CONTEXT_WINDOW) — ' +
  'or run `npx chatgate start --demo` to try chatgate with the built-in offline demo model.';

const DEFAULT_TIMEOUT_MS = 5000;

/** What the network error codes a first run meets mean, beside the code (`ENOTFOUND` alone sends people searching). */
const NETWORK_ERRORS: Readonly<Record<string, string>> = {
  ENOTFOUND: 'no such host, or no network',
  EAI_AGAIN: 'the host name could not be looked up: no network or DNS',
  ECONNREFUSED: 'nothing listens on that port',
  ECONNRESET: 'the connection was closed',
  ETIMEDOUT: 'no answer',
  EHOSTUNREACH: 'no route to the host',
};

/**
 * Asks `GET <baseUrl>/models`; an endpoint that does not implement it (404/405) counts as
 * reachable. Never throws.
 */
export async function probeModels(llm: Config['llm'], timeoutMs = DEFAULT_TIMEOUT_MS): Promise<LlmProbe> {
  const url = `${llm.baseUrl.replace(/\/+$/, '')}/models`;
  try {
    const response = await fetch(url, { headers: authHeaders(llm), signal: AbortSignal.timeout(timeoutMs) });
    if (response.status === 404 || response.status === 405) return { ok: true, detail: `${llm.baseUrl} answers (it does not list models)` };
    if (!response.ok) return { ok: false, detail: `${llm.baseUrl} answered GET /models with HTTP ${response.status}${authHint(response.status)}` };
    const body = (await response.json().catch(() => null)) as { data?: Array<{ id?: unknown }> } | null;
    const models = (body?.data ?? []).map((m) => String(m.id));
    return { ok: true, detail: `${llm.baseUrl} answers (${models.length} models listed)`, models };
  } catch (err) {
    return { ok: false, detail: `${llm.baseUrl} is not reachable (${describeFetchError(err, timeoutMs)})` };
  }
}

/** Sends a one-word chat completion to `llm.model` with a small token limit. Never throws. */
export async function probeCompletion(llm: Config['llm'], timeoutMs = 20_000): Promise<LlmProbe> {
  const url = `${llm.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const body = { model: llm.model, messages: [{ role: 'user', content: 'Reply with the word ok.' }], max_completion_tokens: 16 };
  try {
    const response = await fetch(url, {
      method: 'POST', headers: { ...authHeaders(llm), 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) {
      const text = truncateText(await response.text().catch(() => ''), 200).replace(/\s+/g, ' ');
      return { ok: false, detail: `model ${llm.model} did not answer: HTTP ${response.status}${authHint(response.status)}${text ? ` (${text})` : ''}` };
    }
    const json = (await response.json().catch(() => null)) as { usage?: { total_tokens?: number } } | null;
    const usage = json?.usage?.total_tokens;
    return { ok: true, detail: `model ${llm.model} answers${usage === undefined ? ' (no usage reported: token accounting falls back to counting)' : ` (${countOf(usage, 'token')})`}` };
  } catch (err) {
    return { ok: false, detail: `model ${llm.model} did not answer (${describeFetchError(err, timeoutMs)})` };
  }
}

function authHeaders(llm: Config['llm']): Record<string, string> {
  return llm.apiKey ? { authorization: `Bearer ${llm.apiKey}` } : {};
}

function authHint(status: number): string {
  if (status === 401 || status === 403) return ': the API key was refused (check OPENAI_API_KEY)';
  if (status === 404) return ': check CHATGATE_MODEL and OPENAI_BASE_URL';
  return '';
}

function describeFetchError(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return `no answer within ${timeoutMs} ms`;
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  const code = cause?.code;
  if (code && NETWORK_ERRORS[code]) return `${code}: ${NETWORK_ERRORS[code]}`;
  return code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}
