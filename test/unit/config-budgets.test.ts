import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

const file = (name: string, body: unknown): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'cg-budgets-')), name);
  writeFileSync(path, typeof body === 'string' ? body : JSON.stringify(body));
  return path;
};

describe('budget and price options', () => {
  it('has no budget by default', () => {
    const c = loadConfig({});
    expect(c.budgets).toMatchObject({ user: {}, chat: {}, deployment: {}, turn: {}, timeZone: 'UTC', noticePercent: 80, users: {} });
  });

  it('reads the limits, the time zone and the budgets file', () => {
    const c = loadConfig({
      CHATGATE_BUDGET_USER_DAILY_USD: '0.5', CHATGATE_BUDGET_USER_MONTHLY_TOKENS: '2000000', CHATGATE_BUDGET_DEPLOYMENT_DAILY_USD: '20',
      CHATGATE_BUDGET_TURN_MAX_TOKENS: '50000', CHATGATE_BUDGET_TIMEZONE: 'Europe/Berlin', CHATGATE_BUDGET_NOTICE_PERCENT: '90',
      CHATGATE_BUDGETS_FILE: file('budgets.json', { version: 1, users: { 'telegram:1': 'unlimited', 'discord:7': { dailyUsd: 5 }, 'api:alice': { monthlyTokens: 100 } } }),
    });
    expect(c.budgets).toMatchObject({
      user: { day: { usd: 0.5 }, month: { tokens: 2_000_000 } }, deployment: { day: { usd: 20 } }, turn: { tokens: 50_000 }, timeZone: 'Europe/Berlin', noticePercent: 90,
      users: { 'telegram:1': 'unlimited', 'discord:7': { day: { usd: 5 } }, 'api:alice': { month: { tokens: 100 } } },
    });
  });

  it('spells a time zone as IANA does, whatever case it was written in', () => {
    expect(loadConfig({ CHATGATE_BUDGET_TIMEZONE: 'utc' }).budgets.timeZone).toBe('UTC');
    expect(loadConfig({ CHATGATE_BUDGET_TIMEZONE: 'europe/berlin' }).budgets.timeZone).toBe('Europe/Berlin');
  });

  it('adds and overrides prices from CHATGATE_PRICES', () => {
    const c = loadConfig({ CHATGATE_MODEL: 'my-llm', CHATGATE_CONTEXT_WINDOW: '8192', CHATGATE_PRICES: file('prices.json', { 'my-llm': { input: 1, output: 3 } }) });
    expect(c.llm.pricing).toEqual({ input: 1, output: 3 });
    expect(loadConfig({ CHATGATE_MODEL: 'llama3.1:8b' }).llm.pricing).toBeUndefined();
  });

  it.each([
    ['CHATGATE_PRICES', () => file('prices.json', { 'my-llm': { input: 'cheap', output: 3 } }), /`CHATGATE_PRICES` file .*"my-llm": must be .*bad: `input` \(got "cheap"\)/],
    ['CHATGATE_PRICES', () => file('prices.json', { 'my-llm': { input: 1, output: 3, cached: 1 } }), /`CHATGATE_PRICES` file .*prices\.json: "my-llm": unknown key `cached` \(did you mean `cachedInput`\?\)/],
    ['CHATGATE_PRICES', () => file('prices.json', '{ not json'), /`CHATGATE_PRICES` must name a readable JSON file/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { users: {} }), /`CHATGATE_BUDGETS_FILE` .*: `version` must be 1 \(got none\); the file is \{ "version": 1/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { version: 1, users: { 'telegram:1': { dailyUSD: 5 } } }), /"telegram:1": unknown field `dailyUSD` \(did you mean `dailyUsd`\?\)/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { version: 1, users: {}, chats: { 'web:c1': { dailyUsd: 1 } } }), /: unknown key `chats`; the keys are version, users/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { version: 1, user: { 'telegram:1': { dailyUsd: 1 } } }), /: unknown key `user` \(did you mean `users`\?\)/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { version: 1, users: { 'telegram:1': { dailyTokens: 1.5 } } }), /"telegram:1": `dailyTokens` must be an integer in \[0, 9007199254740991\] \(got 1\.5\)/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { version: 1, users: { 'telegram:1': { monthlyUsd: '5' } } }), /"telegram:1": `monthlyUsd` must be a number in \[0, 1000000000\] with at most 6 decimals \(got "5"\)/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { version: 1, users: { 'c1:42': { dailyUsd: 1 } } }), /"c1:42" must be <channel>:<userId> with a channel of telegram, discord, web, api/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { version: 1, users: { 'telegram:1': {} } }), /"telegram:1": sets no limit: write "unlimited" for no limit, or remove the entry/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { version: 1, users: { 'telegram:1': { dailyTokens: 2 ** 53 } } }), /"telegram:1": `dailyTokens` must be an integer in \[0, 9007199254740991\] \(got 9007199254740992\)/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { version: 1, users: { 'telegram:1': { monthlyTokens: 1e21 } } }), /\(got 1000000000000000000000\)/],
    ['CHATGATE_BUDGET_USER_DAILY_TOKENS', () => '9007199254740993', /`CHATGATE_BUDGET_USER_DAILY_TOKENS` must be an integer in \[0, 9007199254740991\]/],
    ['CHATGATE_BUDGET_TURN_MAX_TOKENS', () => '9007199254740993', /`CHATGATE_BUDGET_TURN_MAX_TOKENS` must be an integer in \[1, 9007199254740991\]/],
    ['CHATGATE_BUDGET_DEPLOYMENT_MONTHLY_USD', () => '0.0000001', /`CHATGATE_BUDGET_DEPLOYMENT_MONTHLY_USD` must be a number in \[0, 1000000000\] with at most 6 decimals \(got 0\.0000001\)/],
    ['CHATGATE_BUDGET_TURN_MAX_USD', () => '0.0000001', /`CHATGATE_BUDGET_TURN_MAX_USD` must be a number in \(0, 1000000000\] with at most 6 decimals \(got 0\.0000001\)/],
    ['CHATGATE_BUDGET_TURN_MAX_USD', () => '0', /`CHATGATE_BUDGET_TURN_MAX_USD` must be a number in \(0, 1000000000\]/],
    ['CHATGATE_BUDGETS_FILE', () => file('budgets.json', { version: 1, users: { 'telegram:1': { dailyUsd: 1e-7 } } }), /"telegram:1": `dailyUsd` must be a number in \[0, 1000000000\] with at most 6 decimals \(got 0\.0000001\)/],
    ['CHATGATE_BUDGET_USER_MONTHLY_USD', () => '1000000001', /`CHATGATE_BUDGET_USER_MONTHLY_USD` must be a number in \[0, 1000000000\]/],
    ['CHATGATE_BUDGET_USER_DAILY_TOKENS', () => '1.5', /`CHATGATE_BUDGET_USER_DAILY_TOKENS` must be an integer in \[0, 9007199254740991\] \(got 1\.5\)/],
    ['CHATGATE_BUDGET_CHAT_MONTHLY_USD', () => '-1', /`CHATGATE_BUDGET_CHAT_MONTHLY_USD` must be a number in \[0, 1000000000\] with at most 6 decimals \(got -1\)/],
    ['CHATGATE_BUDGET_TIMEZONE', () => 'Mars/Olympus', /`CHATGATE_BUDGET_TIMEZONE` must be an IANA time zone/],
  ])('refuses a bad %s with one clear message', (env, value, message) => {
    expect(() => loadConfig({ [env]: value() })).toThrow(message);
  });
});
