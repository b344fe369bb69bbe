/**
 * Speech to text through the endpoint's OpenAI-compatible `/audio/transcriptions` (openai SDK,
 * multipart upload): what turns a voice message or an audio file into the text the model reads.
 */
import { OpenAI, toFile } from 'openai';
import type { CallScope } from '../core/budget.js';
import { LlmError } from '../errors.js';
import { toLlmError } from './errors.js';

/** Options of {@link createTranscriber}. */
export interface TranscriberOptions {
  baseURL?: string;
  apiKey?: string;
  /** Transcription model, e.g. `whisper-1` or `gpt-4o-mini-transcribe`. */
  model: string;
  /** Timeout of one attempt, ms. Default 120 000. */
  timeoutMs?: number;
  /** Retries of transient failures (the SDK's). Default 2. */
  maxRetries?: number;
}

/** One audio file to transcribe. */
export interface AudioFile {
  bytes: Buffer;
  fileName: string;
  mimeType?: string;
}

/** What the provider said a transcription used: seconds of audio (per-minute models) or tokens. */
export interface TranscriptionUsage {
  seconds?: number;
  inputTokens?: number;
  outputTokens?: number;
}

/** A transcript and, when the provider reported it, what it used. */
export interface Transcript {
  text: string;
  usage?: TranscriptionUsage;
}

/** Options of one transcription: aborts it (`signal`), and whom it counts for in the budgets (`scope`). */
export interface TranscribeOptions {
  signal?: AbortSignal;
  scope?: CallScope;
}

/** Transcribes audio; `@throws` LlmError (its kind says whether to tell the user to retry). */
export interface Transcriber {
  readonly model: string;
  transcribe(file: AudioFile, options?: TranscribeOptions): Promise<Transcript>;
}

/** Creates a transcriber on the endpoint. */
export function createTranscriber(options: TranscriberOptions): Transcriber {
  const sdk = new OpenAI({ baseURL: options.baseURL, apiKey: options.apiKey ?? 'none', timeout: options.timeoutMs ?? 120_000, maxRetries: options.maxRetries ?? 2 });
  return {
    model: options.model,
    async transcribe(file, { signal } = {}) {
      try {
        const upload = await toFile(file.bytes, file.fileName, file.mimeType ? { type: file.mimeType } : undefined);
        const result = await sdk.audio.transcriptions.create({ file: upload, model: options.model, response_format: 'json' }, { signal });
        return { text: (result.text ?? '').trim(), ...usageOf(result.usage) };
      } catch (err) {
        if (err instanceof LlmError) throw err;
        throw toLlmError(err, `transcription of ${file.fileName}`, { secrets: options.apiKey ? [options.apiKey] : [], timeoutMs: options.timeoutMs ?? 120_000 });
      }
    },
  };
}

function usageOf(usage: { type: string; seconds?: number; input_tokens?: number; output_tokens?: number } | undefined): { usage?: TranscriptionUsage } {
  if (usage?.type === 'duration' && typeof usage.seconds === 'number') return { usage: { seconds: usage.seconds } };
  if (usage?.type === 'tokens' && typeof usage.input_tokens === 'number') return { usage: { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens ?? 0 } };
  return {};
}
