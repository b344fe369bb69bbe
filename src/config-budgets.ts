/**
 * The budget and price parts of the configuration: `CHATGATE_BUDGET_*`, the budgets file
 * (`CHATGATE_BUDGETS_FILE`) and the prices file (`CHATGATE_PRICES`). Used only by src/config.ts.
 */
import { readFileSync } from 'node:fs';
import { FLAT_LIMIT_FIELDS, fromFlatLimits, type BudgetLimit, type BudgetSettings, type FlatLimits, type LevelLimits } from './core/budget.js';
import { parsePriceTable, type PriceTable } from './core/models.js';

/** The version of the budgets file format this chatgate reads. */
export const BUDGETS_FILE_VERSION = 1;

/** Budget settings from validated option values; `issues` collects what is wrong with the budgets file. */
export function buildBudgets(v: Record<string, unknown>, issues: string[]): BudgetSettings {
  const level = (name: 'USER' | 'CHAT' | 'DEPLOYMENT'): LevelLimits => ({
    ...limitIf('day', v[`CHATGATE_BUDGET_${name}_DAILY_USD`], v[`CHATGATE_BUDGET_${name}_DAILY_TOKENS`]),
    ...limitIf('month', v[`CHATGATE_BUDGET_${name}_MONTHLY_USD`], v[`CHATGATE_BUDGET_${name}_MONTHLY_TOKENS`]),
  });
  const file = v.CHATGATE_BUDGETS_FILE as string | undefined;
  return {
    user: level('USER'),
    chat: level('CHAT'),
    deployment: level('DEPLOYMENT'),
    turn: limit(v.CHATGATE_BUDGET_TURN_MAX_USD, v.CHATGATE_BUDGET_TURN_MAX_TOKENS) ?? {},
    timeZone: v.CHATGATE_BUDGET_TIMEZONE as string,
    noticePercent: v.CHATGATE_BUDGET_NOTICE_PERCENT as number,
    users: file ? readBudgetsFile(file, issues) : {},
    ...(v.CHATGATE_ALERT_WEBHOOK_URL ? { alertWebhookUrl: v.CHATGATE_ALERT_WEBHOOK_URL as string } : {}),
  };
}

/** The prices file named by `CHATGATE_PRICES`, validated; its problems go to `issues`. */
export function readPricesFile(path: string | undefined, issues: string[]): PriceTable {
  if (!path) return {};
  const parsed = readJson(path, 'CHATGATE_PRICES', issues);
  if (parsed === undefined) return {};
  const result = parsePriceTable(parsed);
  if ('issues' in result) {
    issues.push(...result.issues.map((issue) => `\`CHATGATE_PRICES\` file ${path}: ${issue}`));
    return {};
  }
  return result.prices;
}

/**
 * Per-user limits in the flat form of the budgets file and of `chatgate budgets set`
 * (`dailyUsd`, `monthlyUsd`, `dailyTokens`, `monthlyTokens`), or `unlimited`.
 * @returns the limits, or a problem naming the bad field.
 */
export function toLevelLimits(value: unknown): LevelLimits | 'unlimited' | { issue: string } {
  if (value === 'unlimited') return 'unlimited';
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { issue: 'must be "unlimited" or an object of dailyUsd, monthlyUsd, dailyTokens, monthlyTokens' };
  const record = value as Record<string, unknown>;
  const bad = Object.entries(record).filter(([key, n]) => !(FLAT_LIMIT_FIELDS as readonly string[]).includes(key) || typeof n !== 'number' || !(n >= 0) || !Number.isFinite(n));
  if (bad.length > 0) return { issue: `bad ${bad.map(([key]) => key).join(', ')} (fields ${FLAT_LIMIT_FIELDS.join(', ')}, numbers ≥ 0)` };
  return fromFlatLimits(record as FlatLimits);
}

function readBudgetsFile(path: string, issues: string[]): BudgetSettings['users'] {
  const parsed = readJson(path, 'CHATGATE_BUDGETS_FILE', issues) as { version?: unknown; users?: unknown } | undefined;
  if (parsed === undefined) return {};
  if (parsed === null || typeof parsed !== 'object' || parsed.version !== BUDGETS_FILE_VERSION || typeof parsed.users !== 'object' || parsed.users === null) {
    issues.push(`\`CHATGATE_BUDGETS_FILE\` ${path} must be { "version": ${BUDGETS_FILE_VERSION}, "users": { "<channel>:<userId>": … } } (got version ${JSON.stringify(parsed?.version) ?? 'none'})`);
    return {};
  }
  const users: Record<string, LevelLimits | 'unlimited'> = {};
  for (const [user, value] of Object.entries(parsed.users as Record<string, unknown>)) {
    const limits = toLevelLimits(value);
    if (!/^[a-z]+:[\w.@-]+$/.test(user)) issues.push(`\`CHATGATE_BUDGETS_FILE\` ${path}: "${user}" must be <channel>:<userId>`);
    else if (typeof limits === 'object' && 'issue' in limits) issues.push(`\`CHATGATE_BUDGETS_FILE\` ${path}: "${user}" ${limits.issue}`);
    else users[user] = limits;
  }
  return users;
}

function readJson(path: string, option: string, issues: string[]): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    issues.push(`\`${option}\` must name a readable JSON file (${path}: ${(err as Error).message})`);
    return undefined;
  }
}

function limit(usd: unknown, tokens: unknown): BudgetLimit | undefined {
  if (usd === undefined && tokens === undefined) return undefined;
  return { ...(usd !== undefined ? { usd: usd as number } : {}), ...(tokens !== undefined ? { tokens: tokens as number } : {}) };
}

function limitIf(period: 'day' | 'month', usd: unknown, tokens: unknown): LevelLimits {
  const value = limit(usd, tokens);
  return value ? { [period]: value } : {};
}
