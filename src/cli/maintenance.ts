import { createApprovalStore } from '../approvals/store.js';
import { countOf } from '../core/plural.js';
import { denyPending } from '../gateway/approval-commands.js';
import { createTurnProducer } from '../queue/producer.js';
import { resolveQueueNames } from '../queue/names.js';
import { formatTokens } from '../core/session-figures.js';
import type { Config } from '../config.js';
import { createLlmSessionOps, type SessionOps } from '../session/session-ops.js';
import { startDemoModel, type DemoModel } from '../llm/demo-model.js';
import type { Logger } from '../log.js';
import { createSessionStore, parseMeta, type SessionMeta } from '../redis/session-store.js';
import { configuredPrices, sessionLimits, sessionOpsOptions } from './compose.js';
import { createBudgetGuard } from '../budget/guard.js';
import { commandLogger, EXIT, progress, type CliIo, type CliRedis } from './context.js';
import { describeDeployment, type DeploymentLlm } from './deployment.js';
import { isLlmUnconfigured } from './llm-check.js';
import { noSession, withRedis } from './sessions.js';

/** Lease time to live while the CLI compacts or resets a session, ms (a summary may take a while). */
const CLI_LEASE_TTL_MS = 120_000;

/**
 * `chatgate compact <session>`: a forced compaction (layer `manual`) under the session's lease,
 * committed as the worker and the chat command `/compact` commit theirs (the gateway's session
 * operations over `runCompactionStep`), with the session's own model, window and summary model
 * (the configuration's only for a session that recorded none). Prints before → after tokens and the outcome.
 */
export function compactCommand(io: CliIo, sessionId: string, flags: { focus?: string }): Promise<number> {
  return withSession(io, sessionId, async (config, conn, logger, meta, deployment) => {
    if (!config.demo && !deployment && isLlmUnconfigured(config)) {
      io.err(`chatgate: cannot compact ${sessionId}: no LLM endpoint is configured here and no chatgate worker is running to take its settings from; start chatgate (\`npm start\`) or set OPENAI_BASE_URL and OPENAI_API_KEY (or CHATGATE_DEMO=true), then run this again`);
      return EXIT.failure;
    }
    const limits = meta.limits ?? sessionLimits(config);
    const demo: DemoModel | null = config.demo ? await startDemoModel({ logger, model: limits.model }) : null;
    try {
      const ops = sessionOps(config, conn, logger, demo);
      const where = deployment ? `, the LLM ${describeDeployment(deployment)} uses` : '';
      progress(io, `compacting ${sessionId} (summary by ${limits.summaryModel}${demo ? ', the offline demo model' : ''}${where})…`);
      const outcome = await ops.compact(sessionId, { focus: flags.focus });
      if (outcome.busy) return busy(io, sessionId);
      const result = outcome.value;
      io.out(`${sessionId}: ${result.outcome}, ${formatTokens(result.requestTokensBefore)} → ${countOf(result.requestTokensAfter, 'token')} (${result.reason})`);
      if (result.pinnedFacts.length > 0) io.out(`pinned facts: ${result.pinnedFacts.join(', ')}`);
      if (result.outcome !== 'aborted') return EXIT.ok;
      io.err('chatgate: the compaction was aborted and the projection left unchanged; check the LLM endpoint with `chatgate doctor`');
      return EXIT.failure;
    } finally {
      await demo?.close();
    }
  });
}

/**
 * `chatgate reset <session>`: an empty projection and a fresh compaction state under the lease, as
 * the chat command `/reset` does, and as it does the session's open approval questions are cancelled
 * first (`denyPending` via `reset`), so a turn waiting for them ends with the old conversation. The
 * CLI holds no channel: a question keeps its buttons until a press (answered "Already decided",
 * which closes them). The transcript keeps everything and records the reset (a `reset` entry); notes
 * and the usage ledger stay.
 */
export function resetCommand(io: CliIo, sessionId: string): Promise<number> {
  return withSession(io, sessionId, async (config, conn, logger) => {
    const producer = createTurnProducer({ redis: conn.redis }, {
      ...resolveQueueNames({ queuePrefix: config.redis.queuePrefix, queueShards: config.redis.queueShards }), keyPrefix: config.redis.keyPrefix, groupMode: config.groupMode,
    });
    try {
      const approvals = { store: createApprovalStore(conn.redis, { keyPrefix: config.redis.keyPrefix, transcriptRetention: config.transcriptMaxLen }), producer, logger };
      const outcome = await sessionOps(config, conn, logger, null).reset(sessionId, { cancelQuestions: () => denyPending(approvals, sessionId, 'reset') });
      if (outcome.busy) return busy(io, sessionId);
      const { removedMessages, cancelledCalls } = outcome.value;
      const cancelled = cancelledCalls === 0 ? '' : `; ${countOf(cancelledCalls, 'tool call')} waiting for approval cancelled (the turn that asked ended)`;
      io.out(`${sessionId}: reset — ${countOf(removedMessages, 'message')} removed from the projection, fresh compaction state${cancelled}; transcript, notes and usage kept`);
      return EXIT.ok;
    } finally {
      await producer.close();
    }
  });
}

/** Runs `body` for an existing session; an unknown one is exit 1 (checked before any lease is taken). */
function withSession(io: CliIo, sessionId: string, body: (config: Config, conn: CliRedis, logger: Logger, meta: SessionMeta, deployment: DeploymentLlm | null) => Promise<number>): Promise<number> {
  return withRedis(io, async (config, conn, deployment) => {
    const key = createSessionStore({ redis: conn.redis }, { keyPrefix: config.redis.keyPrefix }).keys(sessionId).meta;
    const meta = parseMeta(await conn.redis.hgetall(key));
    if (meta.version === 0) return noSession(io, sessionId);
    return body(config, conn, commandLogger(), meta, deployment);
  });
}

function sessionOps(config: Config, conn: CliRedis, logger: Logger, demo: DemoModel | null): SessionOps {
  const options = sessionOpsOptions(config, CLI_LEASE_TTL_MS);
  // The summary counts for the chat and the deployment (no user asked for it); a used-up budget gives the deterministic fallback.
  const budget = createBudgetGuard({ redis: conn.redis, logger }, { keyPrefix: config.redis.keyPrefix, settings: config.budgets, prices: configuredPrices(config), defaultMaxTokens: config.compaction.reservedOutputTokens || 4096 });
  return createLlmSessionOps({ redis: conn.redis, logger, guardLlm: budget?.llm }, {
    ...options, baseURL: demo?.baseUrl ?? options.baseURL, apiKey: options.apiKey ?? (demo ? 'demo' : undefined),
  });
}

function busy(io: CliIo, sessionId: string): number {
  io.err(`chatgate: ${sessionId} is busy (a worker is running a turn for it); try again in a few seconds`);
  return EXIT.failure;
}
