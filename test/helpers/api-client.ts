/**
 * The OpenAI SDK as an API-channel client in tests: a client of one gateway, a request into a
 * named session, a request that retries while the session is claimed (409), and a second gateway.
 */
import OpenAI from 'openai';
import { gatewayOptions } from '../../src/cli/compose.js';
import type { Config } from '../../src/config.js';
import { readerFor } from '../../src/cli/sessions.js';
import { startGateway, type GatewayHandle } from '../../src/gateway/index.js';
import { createSilentLogger } from '../../src/log.js';
import type { FakeRequest } from '../fakes/openai-server.js';
import type { Stack } from './stack.js';

/** An SDK client of `gateway`'s API channel, with bearer `apiKey` (no SDK retries: the tests count requests). */
export const apiClientOf = (gateway: GatewayHandle, apiKey: string) => new OpenAI({ baseURL: `${gateway.httpUrl}/v1`, apiKey, maxRetries: 0 });

/** Request options naming the session (`X-Chatgate-Session`), with an abort signal when given. */
export const inSession = (name: string, signal?: AbortSignal) => ({ headers: { 'X-Chatgate-Session': name }, ...(signal ? { signal } : {}) });

/** One whole (not streamed) request of `content` into session `name`. */
export const ask = (client: OpenAI, name: string, content: string, signal?: AbortSignal) => client.chat.completions.create({ model: 'chatgate', messages: [{ role: 'user', content }] }, inSession(name, signal));

/** The user texts the fake model was sent in `request`. */
export const userTexts = (request: FakeRequest) => request.messages.filter((m) => m.role === 'user').map((m) => String(m.content));

/** Sends `content` until the session is free (409 while the claim of a request that went away lasts). */
export async function askWhenFree(client: OpenAI, name: string, content: string): Promise<OpenAI.Chat.Completions.ChatCompletion> {
  for (;;) {
    const answer = await ask(client, name, content).catch((err: unknown) => (err instanceof OpenAI.ConflictError ? null : Promise.reject(err)));
    if (answer) return answer;
  }
}

/** A second real gateway on `stack`'s Redis and configuration, or `config` (the stack's own is the first): the caller closes it. */
export function startSecondGateway(stack: Stack, config: Config = stack.config): Promise<GatewayHandle> {
  return startGateway({ redis: stack.t.redis, logger: createSilentLogger(), sessions: readerFor(config, { redis: stack.t.redis }) }, gatewayOptions(config));
}
