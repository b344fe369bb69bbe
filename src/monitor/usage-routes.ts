import type { Hono } from 'hono';
import { UsageQueryError } from '../errors.js';
import { readUsageOverview, type BudgetBlocks, type BudgetStates } from '../usage/overview.js';
import type { UsageReader } from '../usage/read-model.js';
import { renderOverviewPage } from './overview-page.js';
import { monitorPageHeaders } from './page-csp.js';

/** What the usage routes read: the usage read model (src/usage) and, with budgets, their counters. */
export interface UsageMonitorDeps {
  reader: UsageReader;
  /** The budget counters of each subject (src/budget's ledger `statesOf`). Absent: no budgets. */
  budgets?: BudgetStates;
  /** The limit whose marker holds, per subject (src/budget's ledger `blockedOf`): the overview shows those counters blocked. */
  budgetBlocks?: BudgetBlocks;
  /** Percent of a limit from which the overview calls it near (CHATGATE_BUDGET_NOTICE_PERCENT). Default 80. */
  budgetNoticePercent?: number;
}

/** The monitor's paths of usage, to put behind the access guard. */
export const USAGE_PATHS = ['/api/usage', '/api/usage/*', '/overview'] as const;

/**
 * `GET /api/usage?since=7d&by=user` (the report `chatgate usage --json` prints; 400 naming the rule
 * for a bad query), `GET /api/usage/overview` and the overview page at `/overview`.
 */
export function addUsageRoutes(app: Hono, deps: UsageMonitorDeps, options: { pollMs?: number } = {}): void {
  app.get('/api/usage', async (c) => {
    try {
      return c.json(await deps.reader.report({ since: c.req.query('since') ?? '7d', by: c.req.query('by') ?? 'user' }));
    } catch (err) {
      if (err instanceof UsageQueryError) return c.json({ error: err.message }, 400);
      throw err;
    }
  });
  app.get('/api/usage/overview', async (c) => c.json(await readUsageOverview(deps.reader, { budgets: deps.budgets, blocked: deps.budgetBlocks, noticePercent: deps.budgetNoticePercent })));
  const overview = renderOverviewPage(options);
  const overviewHeaders = monitorPageHeaders(overview);
  app.get('/overview', (c) => c.html(overview, 200, overviewHeaders));
}
