import { UsageQueryError } from '../errors.js';
import { formatUsageCsv, formatUsageReport } from '../usage/format.js';
import { createUsageReader, type UsageReader } from '../usage/read-model.js';
import type { Config } from '../config.js';
import { EXIT, type CliIo, type CliRedis } from './context.js';
import { withRedis } from './sessions.js';

/** Flags of `chatgate usage` without a session. */
export interface UsageReportFlags {
  since: string;
  by: string;
  json?: boolean;
  csv?: boolean;
}

/** The usage read model for the configuration (its key prefix and rollup retention). */
export function usageReaderFor(config: Config, conn: Pick<CliRedis, 'redis'>): UsageReader {
  return createUsageReader(conn.redis, { keyPrefix: config.redis.keyPrefix, ...config.usageRetention });
}

/**
 * `chatgate usage --since 7d --by user|chat|channel|model [--json|--csv]`: totals and groups from
 * the rollups, the same figures as `/api/usage` and the dashboard overview. Exit 2 for a bad query.
 */
export function usageReportCommand(io: CliIo, flags: UsageReportFlags): Promise<number> {
  if (flags.json && flags.csv) {
    io.err('chatgate: --json and --csv exclude each other');
    return Promise.resolve(EXIT.usage);
  }
  return withRedis(io, async (config, conn) => {
    try {
      const report = await usageReaderFor(config, conn).report({ since: flags.since, by: flags.by });
      io.out(flags.json ? JSON.stringify(report, null, 2) : flags.csv ? formatUsageCsv(report) : formatUsageReport(report));
      return EXIT.ok;
    } catch (err) {
      if (!(err instanceof UsageQueryError)) throw err;
      io.err(`chatgate: ${err.message}`);
      return EXIT.usage;
    }
  });
}
