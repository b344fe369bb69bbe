/**
 * The budget and price parts of the configuration: `CHATGATE_BUDGET_*`, the budgets file
 * (`CHATGATE_BUDGETS_FILE`) and the prices file (`CHATGATE_PRICES`). Used by src/config.ts; the
 * CLI's `budgets set` checks its subjects and limits with the same rules.
 */
import { readFileSync } from 'node:fs';
import { FLAT_LIMIT_FIELDS, fromFlatLimits, type BudgetLimit, type BudgetSettings, type FlatLimits, type LevelLimits } from './core/budget.js';
import { CHANNEL_NAMES } from './core/inbound.js';
import { parsePriceTable, type PriceTable } from './core/models.js';
import { FLAT_LIMIT_RULES, numberIssues, unknownKeysText } from './core/option-checks.js';

/** The version of the budgets file format this chatgate reads. */
export const BUDGETS_FILE_VERSION = 1;

/** The keys of the budgets file. */
const FILE_KEYS = ['version', 'users'];

const CHANNEL = `(?:${CHANNEL_NAMES.join('|')})`;
const ID_PART = '[\\w.@-]+';
/** A user, `<channel>:<userId>`, and a chat, its session id `<channel>:<chatId>[:<thread>][:u<userId>]` (the API's `api:<user>:<session>`). */
const SUBJECT_RE = { user: new RegExp(`^${CHANNEL}:${ID_PART}$`), chat: new RegExp(`^${CHANNEL}:${ID_PART}(?::${ID_PART})*$`) };

/** How a user or chat subject is written, completing "a user is …". */
export const BUDGET_SUBJECT_FORMS = {
  user: `<channel>:<userId> with a channel of ${CHANNEL_NAMES.join(', ')} (e.g. telegram:42, web:alice, api:alice)`,
  chat: `a session id, <channel>:<chatId>… with a channel of ${CHANNEL_NAMES.join(', ')} (e.g. web:c1, telegram:-1001234, telegram:-1001234:7 for a topic, discord:1234567890, api:alice:default)`,
} as const;

/** Whether `id` is a user or chat subject of a channel chatgate has (a limit on any other never applies). */
export function isBudgetSubject(level: 'user' | 'chat', id: string): boolean {
  return SUBJECT_RE[level].test(id);
}

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
    timeZone: canonicalTimeZone(v.CHATGATE_BUDGET_TIMEZONE as string),
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
  const unknown = Object.keys(record).filter((key) => !(FLAT_LIMIT_FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0) return { issue: `${unknownKeysText(unknown, FLAT_LIMIT_FIELDS, 'field')}; the fields are ${FLAT_LIMIT_FIELDS.join(', ')}` };
  const bad = numberIssues(record, FLAT_LIMIT_RULES);
  if (bad.length > 0) return { issue: bad.join('; ') };
  // `{}` would silently replace the user level's limits with none.
  if (FLAT_LIMIT_FIELDS.every((field) => record[field] === undefined)) return { issue: `sets no limit: write "unlimited" for no limit, or remove the entry to keep the user level's (fields: ${FLAT_LIMIT_FIELDS.join(', ')})` };
  return fromFlatLimits(record as FlatLimits);
}

function readBudgetsFile(path: string, issues: string[]): BudgetSettings['users'] {
  const parsed = readJson(path, 'CHATGATE_BUDGETS_FILE', issues);
  if (parsed === undefined) return {};
  const problem = fileShapeIssue(parsed);
  if (problem) {
    issues.push(`\`CHATGATE_BUDGETS_FILE\` ${path}: ${problem}; the file is { "version": ${BUDGETS_FILE_VERSION}, "users": { "<channel>:<userId>": … } }`);
    return {};
  }
  const users: Record<string, LevelLimits | 'unlimited'> = {};
  for (const [user, value] of Object.entries((parsed as { users: Record<string, unknown> }).users)) {
    const limits = toLevelLimits(value);
    if (!isBudgetSubject('user', user)) issues.push(`\`CHATGATE_BUDGETS_FILE\` ${path}: "${user}" must be ${BUDGET_SUBJECT_FORMS.user}`);
    else if (typeof limits === 'object' && 'issue' in limits) issues.push(`\`CHATGATE_BUDGETS_FILE\` ${path}: "${user}": ${limits.issue}`);
    else users[user] = limits;
  }
  return users;
}

/** What is wrong with the budgets file's outer shape, or undefined: keys first, so a misspelt key is named as such. */
function fileShapeIssue(parsed: unknown): string | undefined {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return `must be a JSON object (got ${Array.isArray(parsed) ? 'an array' : JSON.stringify(parsed)})`;
  const record = parsed as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !FILE_KEYS.includes(key));
  if (unknown.length > 0) return `${unknownKeysText(unknown, FILE_KEYS)}; the keys are ${FILE_KEYS.join(', ')}`;
  if (record.version !== BUDGETS_FILE_VERSION) return `\`version\` must be ${BUDGETS_FILE_VERSION} (got ${JSON.stringify(record.version) ?? 'none'})`;
  if (record.users === null || typeof record.users !== 'object' || Array.isArray(record.users)) return `\`users\` must be an object (got ${JSON.stringify(record.users) ?? 'none'})`;
  return undefined;
}

function readJson(path: string, option: string, issues: string[]): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    issues.push(`\`${option}\` must name a readable JSON file (${path}: ${(err as Error).message})`);
    return undefined;
  }
}

/** A time zone as IANA spells it (`utc` → `UTC`, `europe/berlin` → `Europe/Berlin`): the words "resets at 00:00 UTC" name it so. */
function canonicalTimeZone(timeZone: string): string {
  return new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
}

function limit(usd: unknown, tokens: unknown): BudgetLimit | undefined {
  if (usd === undefined && tokens === undefined) return undefined;
  return { ...(usd !== undefined ? { usd: usd as number } : {}), ...(tokens !== undefined ? { tokens: tokens as number } : {}) };
}

function limitIf(period: 'day' | 'month', usd: unknown, tokens: unknown): LevelLimits {
  const value = limit(usd, tokens);
  return value ? { [period]: value } : {};
}
