import { countOf } from '../core/plural.js';
import { formatTokens } from '../core/session-figures.js';
import type { Config } from '../config.js';
import { hasToolCalls, messageText } from '../core/messages.js';
import { formatSessionUsage, formatSessionsTable } from '../monitor/session-table.js';
import { sessionKeys } from '../redis/keys.js';
import { createRedisSessionView } from '../redis/session-reader.js';
import type { SessionView } from '../core/session-view.js';
import { readTranscript, type StoredTranscriptEntry } from '../redis/transcript.js';
import { readHeartbeats } from '../redis/heartbeats.js';
import { withDeploymentLlm, type DeploymentLlm } from './deployment.js';
import { commandLogger, connectRedis, EXIT, loadCliConfig, type CliIo, type CliRedis } from './context.js';

/** Flags of `chatgate sessions`. */
export interface SessionsFlags {
  sort: 'activity' | 'fill';
  json?: boolean;
  limit: number;
}

const TRANSCRIPT_BATCH = 500;

/**
 * Runs `body` with the configuration and a Redis connection, closing it afterwards. The LLM
 * settings are the running deployment's when the environment chooses none ({@link withDeploymentLlm}).
 */
export async function withRedis(io: CliIo, body: (config: Config, conn: CliRedis, deployment: DeploymentLlm | null) => Promise<number>): Promise<number> {
  const loaded = loadCliConfig(io);
  const conn = await connectRedis(io, loaded, commandLogger());
  try {
    // Only this version's beats: a worker of another chatgate version on the prefix lends no LLM settings.
    const { processes } = await readHeartbeats(conn.redis, { keyPrefix: loaded.redis.keyPrefix });
    const { config, deployment } = withDeploymentLlm(loaded, io.env, processes);
    return await body(config, conn, deployment);
  } finally {
    await conn.close();
  }
}

/**
 * The Redis session view for the configuration. Sessions are shown with the limits they recorded
 * (model, window, reserve); the configuration's are only the default of sessions that recorded none.
 */
export function readerFor(config: Config, conn: Pick<CliRedis, 'redis'>): SessionView {
  return createRedisSessionView({ redis: conn.redis }, {
    keyPrefix: config.redis.keyPrefix, contextWindow: config.llm.contextWindow, reservedOutputTokens: config.compaction.reservedOutputTokens,
    model: config.llm.model, summaryModel: config.llm.summaryModel,
    threshold: config.compaction.threshold, hygieneThreshold: config.compaction.hygieneThreshold,
  });
}

/** `chatgate sessions`: the table (or JSON) of sessions, by last activity or context fill. */
export function sessionsCommand(io: CliIo, flags: SessionsFlags): Promise<number> {
  return withRedis(io, async (config, conn) => {
    const page = await readerFor(config, conn).listSessions({ sort: flags.sort === 'fill' ? 'fill' : 'lastActivity', limit: flags.limit });
    if (flags.json) io.out(JSON.stringify(page, null, 2));
    else {
      io.out(formatSessionsTable(page.items));
      if (page.total > page.items.length) io.err(`chatgate: showing ${page.items.length} of ${countOf(page.total, 'session')} (--limit N shows more)`);
    }
    return EXIT.ok;
  });
}

/** `chatgate usage <session>`: the usage ledger, context fill and compactions of one session. */
export function usageCommand(io: CliIo, sessionId: string, flags: { json?: boolean }): Promise<number> {
  return withRedis(io, async (config, conn) => {
    const detail = await readerFor(config, conn).getSession(sessionId);
    if (!detail) return noSession(io, sessionId);
    io.out(flags.json ? JSON.stringify(detail, null, 2) : formatSessionUsage(detail));
    return EXIT.ok;
  });
}

/** `chatgate transcript <session>`: every message and compaction event, oldest first. */
export function transcriptCommand(io: CliIo, sessionId: string, flags: { jsonl?: boolean }): Promise<number> {
  return withRedis(io, async (config, conn) => {
    const keys = sessionKeys(sessionId, config.redis.keyPrefix);
    if ((await conn.redis.xlen(keys.transcript)) === 0) return noSession(io, sessionId);
    let start = '-';
    for (;;) {
      const batch = await readTranscript(conn.redis, keys, start, '+', TRANSCRIPT_BATCH);
      for (const entry of batch) io.out(flags.jsonl ? JSON.stringify(entry) : formatEntry(entry));
      if (batch.length < TRANSCRIPT_BATCH) return EXIT.ok;
      start = `(${batch.at(-1)?.id ?? ''}`;
    }
  });
}

/** Prints that the session does not exist. @returns exit code 1. */
export function noSession(io: CliIo, sessionId: string): number {
  io.err(`chatgate: no session ${sessionId} (\`chatgate sessions\` lists the sessions; ids look like web:abc or telegram:123)`);
  return EXIT.failure;
}

/** One transcript entry as a readable line (multi-line texts indented). */
export function formatEntry(entry: StoredTranscriptEntry): string {
  const when = new Date(entry.atMs).toISOString().replace('T', ' ').slice(0, 19);
  if (entry.type === 'compaction') {
    const reason = entry.reason ? ` — ${entry.reason}` : '';
    return `${when}  ── compaction (${entry.layer}): ${entry.outcome}, ${formatTokens(entry.tokensBefore)} → ${countOf(entry.tokensAfter, 'token')} in ${entry.durationMs} ms${reason}`;
  }
  if (entry.type === 'approval') return `${when}  ── approval ${entry.approvalId}: ${entry.tool} ${entry.decision}${entry.by ? ` by ${entry.by.userName} (${entry.by.userId})` : ` (${entry.via})`}${entry.always ? ', always in this chat' : ''} — ${entry.args}`;
  if (entry.type === 'reset') return `${when}  ── reset: ${countOf(entry.removedMessages, 'message')} left the projection (the transcript keeps ${entry.removedMessages === 1 ? 'it' : 'them'})`;
  const message = entry.message;
  let text = messageText(message);
  if (hasToolCalls(message)) text += `${text ? '\n' : ''}${message.tool_calls.map((c) => `→ ${c.function.name}(${c.function.arguments})`).join('\n')}`;
  const who = message.role === 'tool' ? `tool[${message.tool_call_id}]` : message.role;
  return `${when}  ${who}: ${text.replace(/\n/g, '\n    ')}`;
}
