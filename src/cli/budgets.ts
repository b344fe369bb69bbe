/**
 * The actions of `chatgate budgets`: list what every limit has used and has left, store a
 * subject's limits in Redis (they win over the budgets file and the environment), remove them.
 */
import { BUDGET_LEVELS, duration, FLAT_LIMIT_FIELDS, formatAmount, formatUsed, hasBudgets, toFlatLimits, type BudgetLevel, type FlatLimits, type LevelLimits } from '../core/budget.js';
import { DEPLOYMENT_SUBJECT } from '../budget/ledger.js';
import { createBudgetAdmin, type BudgetRow, type LimitsPatch } from '../budget/overrides.js';
import type { Config } from '../config.js';
import { BUDGET_SUBJECT_FORMS, isBudgetSubject } from '../config-budgets.js';
import { budgetSettingsDigest, budgetSettingsGroups, describeBudgetDigest, describeBudgetGroups, describeForeignBeats, readHeartbeats, type BudgetSettingsGroup } from '../redis/heartbeats.js';
import { EXIT, type CliIo, type CliRedis } from './context.js';
import { withRedis } from './sessions.js';

/** A limit flag's value: the limit, or `none` to remove it. */
export type LimitFlag = number | 'none';

/** Flags of `chatgate budgets set`. */
export interface BudgetsSetFlags {
  dailyUsd?: LimitFlag;
  monthlyUsd?: LimitFlag;
  dailyTokens?: LimitFlag;
  monthlyTokens?: LimitFlag;
  unlimited?: boolean;
  json?: boolean;
}

/**
 * `chatgate budgets list`: one line per limit in force (user, chat, deployment × day, month), unlimited
 * subjects too; a limit whose marker holds says `blocked`, a subject whose marker this version cannot
 * read says so and what drops it. Configured limits are this command's own:
 * when the live gateways and workers beat other budget settings, or differ among themselves, one
 * line on stderr says so (and `warning` in --json).
 */
export function listCommand(io: CliIo, flags: { json?: boolean }): Promise<number> {
  return withAdmin(io, async (admin, config, conn) => {
    const rows = await admin.list();
    const own = budgetSettingsDigest(config.budgets);
    const { processes, foreign } = await readHeartbeats(conn.redis, { keyPrefix: config.redis.keyPrefix });
    const groups = budgetSettingsGroups(processes);
    // A beat of another chatgate version cannot be compared: the list still shows, naming it.
    const unknown = foreign.length > 0 ? `the budget settings of another chatgate version are unknown: ${describeForeignBeats(foreign)}` : undefined;
    const warning = [settingsWarning(own, groups), unknown].filter(Boolean).join('; ') || undefined;
    if (warning) io.err(`chatgate budgets: warning: ${warning}`);
    if (flags.json) {
      const limits = rows.map((r) => ({ ...r, resetsAt: new Date(r.resetsAtMs).toISOString(), resetsAtMs: undefined }));
      const live = groups.flatMap((g) => g.processes);
      io.out(JSON.stringify({ limits, settings: { digest: own, live }, warning: warning ?? null }, null, 2));
      return EXIT.ok;
    }
    if (rows.length === 0) {
      io.out('No budget limit is set (CHATGATE_BUDGET_*, CHATGATE_BUDGETS_FILE or `chatgate budgets set`).');
      return EXIT.ok;
    }
    io.out(table(rows, Date.now()));
    return EXIT.ok;
  });
}

/** `chatgate budgets set <level> [id] --daily-usd …`: stores the subject's limits with these changed. */
export function setCommand(io: CliIo, levelArg: string, id: string | undefined, flags: BudgetsSetFlags): Promise<number> {
  const subject = checkSubject(io, levelArg, id);
  if (!subject) return Promise.resolve(EXIT.usage);
  const patch: LimitsPatch = {};
  for (const key of FLAT_LIMIT_FIELDS) {
    const value = flags[key];
    if (value !== undefined) patch[key] = value === 'none' ? null : value;
  }
  if (flags.unlimited && Object.keys(patch).length > 0) return usage(io, '--unlimited cannot be combined with a limit');
  if (!flags.unlimited && Object.keys(patch).length === 0) return usage(io, 'say what to set: --daily-usd, --monthly-usd, --daily-tokens, --monthly-tokens (a value or `none`) or --unlimited');
  return withAdmin(io, async (admin, config) => {
    const stored = await admin.set(subject.level, subject.id, flags.unlimited ? 'unlimited' : patch);
    // Processes without a configured limit never look at the counters: a stored limit alone holds nothing.
    if (!hasBudgets(config.budgets)) io.err('chatgate budgets: note: this configuration sets no limit, and gateways and workers started with none do not check budgets; set a CHATGATE_BUDGET_* limit or CHATGATE_BUDGETS_FILE where they run');
    if (flags.json) io.out(JSON.stringify({ level: subject.level, subject: subject.id, limits: flatLimits(stored), source: 'override' }, null, 2));
    else io.out(`${subjectName(subject)}: ${describeLimits(stored)} (stored in Redis; wins over the budgets file and the environment until \`chatgate budgets reset\`)`);
    return EXIT.ok;
  });
}

/** `chatgate budgets reset <level> [id] [--usage]`: removes the stored limits (and zeroes the counters with --usage). */
export function resetCommand(io: CliIo, levelArg: string, id: string | undefined, flags: { usage?: boolean; json?: boolean }): Promise<number> {
  const subject = checkSubject(io, levelArg, id);
  if (!subject) return Promise.resolve(EXIT.usage);
  return withAdmin(io, async (admin, config) => {
    const removed = await admin.reset(subject.level, subject.id, { usage: flags.usage });
    const now = await admin.limitsOf(subject.level, subject.id);
    if (flags.json) {
      io.out(JSON.stringify({ level: subject.level, subject: subject.id, removedOverride: removed, usageReset: flags.usage === true, limits: flatLimits(now.limits), source: now.source }, null, 2));
      return EXIT.ok;
    }
    const what = removed ? 'stored limits removed' : 'no stored limits to remove';
    const counters = flags.usage ? `; today's and this month's use start again at 0 (${config.budgets.timeZone})` : '';
    io.out(`${subjectName(subject)}: ${what}${counters}; in force now (${now.source}): ${describeLimits(now.limits)}`);
    return EXIT.ok;
  });
}

/**
 * What is wrong with the budget settings in force, in one line, or undefined: the live gateways
 * and workers differ among themselves (they enforce different limits), or from this command's
 * `own` (the configured limits it lists are not theirs). Nothing when no process is alive.
 */
export function settingsWarning(own: string, groups: readonly BudgetSettingsGroup[]): string | undefined {
  const mine = `this command has ${describeBudgetDigest(own)}`;
  if (groups.length > 1) {
    return `the live gateways and workers enforce different limits: ${describeBudgetGroups(groups)} (${mine}). Start every gateway and worker with the same CHATGATE_BUDGET_* and CHATGATE_BUDGETS_FILE, and this command too`;
  }
  const theirs = groups[0];
  if (!theirs || theirs.digest === own) return undefined;
  return `${mine} but ${describeBudgetGroups([theirs])}: limits listed from \`environment\` or \`file\` are not the ones that hold. Run it with the workers' CHATGATE_BUDGET_* and CHATGATE_BUDGETS_FILE`;
}

function withAdmin(io: CliIo, body: (admin: ReturnType<typeof createBudgetAdmin>, config: Config, conn: CliRedis) => Promise<number>): Promise<number> {
  return withRedis(io, (config, conn) => body(createBudgetAdmin(conn.redis, { keyPrefix: config.redis.keyPrefix, settings: config.budgets }), config, conn));
}

function checkSubject(io: CliIo, levelArg: string, id: string | undefined): { level: BudgetLevel; id: string } | null {
  const fail = (text: string) => {
    io.err(`chatgate budgets: ${text}`);
    return null;
  };
  if (!(BUDGET_LEVELS as readonly string[]).includes(levelArg)) return fail(`the level must be user, chat or deployment (got "${levelArg}")`);
  const level = levelArg as BudgetLevel;
  if (level === 'deployment') return id === undefined || id === DEPLOYMENT_SUBJECT ? { level, id: DEPLOYMENT_SUBJECT } : fail(`the deployment takes no id (got "${id}")`);
  if (id === undefined || id.trim() === '') return fail(`say which ${level}: chatgate budgets … ${level} <${level === 'user' ? 'channel>:<userId' : 'session id'}>`);
  // A limit on a subject no session is named after would never apply.
  if (!isBudgetSubject(level, id)) return fail(`a ${level} is ${BUDGET_SUBJECT_FORMS[level]} (got "${id}")`);
  return { level, id };
}

/** "user telegram:42", "chat web:c1", "the deployment". */
function subjectName(subject: { level: BudgetLevel; id: string }): string {
  return subject.level === 'deployment' ? 'the deployment' : `${subject.level} ${subject.id}`;
}

function usage(io: CliIo, text: string): Promise<number> {
  io.err(`chatgate budgets set: ${text}`);
  return Promise.resolve(EXIT.usage);
}

function flatLimits(limits: LevelLimits | 'unlimited'): FlatLimits | 'unlimited' {
  return limits === 'unlimited' ? 'unlimited' : toFlatLimits(limits);
}

/** "daily $5.00 and 100,000 tokens, monthly none", "unlimited", "no limit". */
function describeLimits(limits: LevelLimits | 'unlimited'): string {
  if (limits === 'unlimited') return 'unlimited';
  const one = (l?: { usd?: number; tokens?: number }) => [l?.usd !== undefined ? formatAmount('usd', l.usd) : '', l?.tokens !== undefined ? formatAmount('tokens', l.tokens) : ''].filter(Boolean).join(' and ') || 'none';
  if (!limits.day && !limits.month) return 'no limit';
  return `daily ${one(limits.day)}, monthly ${one(limits.month)}`;
}

function table(rows: readonly BudgetRow[], nowMs: number): string {
  const head = ['level', 'subject', 'period', 'used', 'limit', 'left', 'resets in', 'from', 'state'];
  // The deployment's counters have no subject of their own; an unlimited subject's limit is "unlimited".
  const amount = (r: BudgetRow, value: number | null) => (value === null ? (r.limit === null ? 'unlimited' : '-') : formatAmount(r.unit, value));
  const body = rows.map((r) => [
    r.level, r.level === 'deployment' ? '(whole)' : r.subject, r.period, formatUsed(r), amount(r, r.limit), r.left === null ? '-' : amount(r, r.left), duration(r.resetsAtMs - nowMs), r.source,
    r.blocked ? 'blocked: answered at once until it resets' : r.markerUnreadable ?? '',
  ]);
  const widths = head.map((h, k) => Math.max(h.length, ...body.map((cells) => cells[k]!.length)));
  return [head, ...body].map((cells) => cells.map((cell, k) => cell.padEnd(widths[k]!)).join('  ').trimEnd()).join('\n');
}
