/**
 * Speech to text through the endpoint's OpenAI-compatible `/audio/transcriptions` (openai SDK,
 * multipart upload): what turns a voice message or an audio file into the text the model reads.
 */
import { OpenAI, toFile } from 'openai';
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

/** Transcribes audio; `@throws` LlmError (its kind says whether to tell the user to retry). */
export interface Transcriber {
  readonly model: string;
  transcribe(file: AudioFile, signal?: AbortSignal): Promise<string>;
}

/** Creates a transcriber on the endpoint. */
export function createTranscriber(options: TranscriberOptions): Transcriber {
  const sdk = new OpenAI({ baseURL: options.baseURL, apiKey: options.apiKey ?? 'none', timeout: options.timeoutMs ?? 120_000, maxRetries: options.maxRetries ?? 2 });
  return {
    model: options.model,
    async transcribe(file, signal) {
      try {
        const upload = await toFile(file.bytes, file.fileName, file.mimeType ? { type: file.mimeType } : undefined);
        const result = await sdk.audio.transcriptions.create({ file: upload, model: options.model, response_format: 'json' }, { signal });
        const text = typeof result === 'string' ? result : result.text;
        return (text ?? '').trim();
      } catch (err) {
        if (err instanceof LlmError) throw err;
        throw toLlmError(err, `transcription of ${file.fileName}`, { secrets: options.apiKey ? [options.apiKey] : [], timeoutMs: options.timeoutMs ?? 120_000 });
      }
    },
  };
}
