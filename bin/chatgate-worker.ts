/**
 * `chatgate-worker`: runs one agent worker process (run with tsx). The endpoint comes from the
 * environment: REDIS_URL, OPENAI_BASE_URL, OPENAI_API_KEY, CHATGATE_MODEL, CHATGATE_SUMMARY_MODEL,
 * CHATGATE_CONTEXT_WINDOW (default: the model table). SIGTERM/SIGINT drain running turns and exit 0.
 */
import { Command } from 'commander';
import { lookupModel } from '../src/core/models.js';
import { createLogger } from '../src/log.js';
import { runWorker } from '../workers/main.js';

const program = new Command('chatgate-worker')
  .option('--concurrency <n>', 'turns run in parallel', '4')
  .option('--key-prefix <prefix>', 'session key prefix', 'cg:')
  .option('--queue-prefix <prefix>', 'BullMQ prefix (hash-tagged)', '{cgq}')
  .option('--threshold <ratio>', 'in-loop compaction trigger', '0.5')
  .option('--reserved-output-tokens <n>', 'tokens kept free for the answer', '0')
  .option('--max-model-calls <n>', 'model calls per turn', '12')
  .option('--lease-ttl-ms <ms>', 'session lease TTL', '15000')
  .option('--lock-duration-ms <ms>', 'BullMQ job lock (a dead worker\'s turn is retried after it)', '30000')
  .option('--log-level <level>', 'pino level', process.env.LOG_LEVEL ?? 'info')
  .parse();

const flags = program.opts<Record<string, string>>();
const model = process.env.CHATGATE_MODEL ?? 'gpt-4o-mini';
const contextWindow = Number(process.env.CHATGATE_CONTEXT_WINDOW ?? lookupModel(model)?.contextWindow ?? 128_000);
const logger = createLogger({ level: flags.logLevel, base: { pid: process.pid } });

const worker = await runWorker({
  redis: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  keyPrefix: flags.keyPrefix,
  queuePrefix: flags.queuePrefix,
  llm: { baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY, model, summaryModel: process.env.CHATGATE_SUMMARY_MODEL },
  contextWindow,
  threshold: Number(flags.threshold),
  reservedOutputTokens: Number(flags.reservedOutputTokens),
  concurrency: Number(flags.concurrency),
  maxModelCalls: Number(flags.maxModelCalls),
  leaseTtlMs: Number(flags.leaseTtlMs),
  lockDurationMs: Number(flags.lockDurationMs),
  stalledIntervalMs: Number(flags.lockDurationMs),
  logger,
});

let stopping = false;
const stop = (signal: string): void => {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'draining');
  worker.close().then(() => process.exit(0), (err: unknown) => {
    logger.error({ err }, 'shutdown failed');
    process.exit(1);
  });
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
