import type { Config } from '../config.js';
import { redactRedisUrl } from '../redis/client.js';
import { errorText, CliExit, commandLogger, connectRedis, EXIT, loadCliConfig, progress, type CliIo, type CliRedis } from './context.js';
import { buildStatusReport, type StatusReport } from './status-report.js';
import type { StatusCheck } from './status-check.js';

/** Flags of `chatgate status`. */
export interface StatusFlags {
  json?: boolean;
}

/**
 * `chatgate status`: whether a gateway runs, which workers are alive (their heartbeats), the
 * channels, the LLM, queue depths, failed messages and sessions over the hygiene line — one line
 * each (`ok`, `warn`, `DOWN` with what to do), or the whole report as JSON with `--json`.
 * Progress goes to stderr. @returns 1 when anything is down (Redis included), else 0.
 */
export async function statusCommand(io: CliIo, flags: StatusFlags = {}): Promise<number> {
  let config: Config;
  try {
    config = loadCliConfig(io);
  } catch (err) {
    if (!(err instanceof CliExit)) throw err;
    print(io, { ok: false, checks: [{ name: 'config', status: 'down', detail: 'invalid (see the lines above)', fix: 'correct the named options; every option is listed in docs/operating.md' }] }, flags);
    return EXIT.failure;
  }
  progress(io, 'looking for Redis…');
  let conn: CliRedis;
  try {
    conn = await connectRedis(io, config, commandLogger());
  } catch (err) {
    const detail = err instanceof CliExit ? 'not reachable (see above)' : errorText(err);
    const check: StatusCheck = { name: 'redis', status: 'down', detail, fix: 'start Redis, or set REDIS_URL (REDIS_CLUSTER_NODES) to the one your gateway and workers use' };
    print(io, { ok: false, checks: [check] }, flags);
    return EXIT.failure;
  }
  try {
    const report = await buildStatusReport(config, conn.redis, (text) => progress(io, text));
    const where = `${redactRedisUrl(conn.resolved.url)} (${conn.resolved.source})`;
    report.checks[0] = conn.resolved.source === 'spawned'
      ? { name: 'redis', status: 'warn', detail: `no Redis was running, so this command started one at ${where}: nothing of chatgate runs on it`, fix: 'set REDIS_URL to the Redis your gateway and workers use' }
      : { name: 'redis', status: 'ok', detail: `${where} answers` };
    print(io, report, flags);
    return report.ok ? EXIT.ok : EXIT.failure;
  } finally {
    await conn.close();
  }
}

function print(io: CliIo, report: Pick<StatusReport, 'ok' | 'checks'> & Partial<StatusReport>, flags: StatusFlags): void {
  if (flags.json) {
    io.out(JSON.stringify(report, null, 2));
    return;
  }
  for (const check of report.checks) io.out(formatCheck(check));
  const down = report.checks.filter((c) => c.status === 'down').map((c) => c.name);
  io.out(down.length > 0 ? `DOWN: ${down.join(', ')} — see the fix lines above.` : 'Everything is up.');
}

/** One check as a line (`ok`, `warn`, `DOWN`, `skip`), with its fix indented below. */
export function formatCheck(check: StatusCheck): string {
  const label = check.status === 'down' ? 'DOWN' : check.status;
  return `${label.padEnd(4)}  ${check.name.padEnd(9)} ${check.detail}${check.fix && check.status !== 'ok' ? `\n                fix: ${check.fix}` : ''}`;
}
