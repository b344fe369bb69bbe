export { createMonitorApp } from './app.js';
export type { ChannelsPanel, MonitorDeps, MonitorOptions, ReadinessCheck, ResolvedMonitorOptions, StatusPanel } from './app.js';
export { createAccessGuard, createMonitorAuth, isLoopbackRequestHost, MONITOR_COOKIE } from './auth.js';
export type { AccessGuardOptions, MonitorAuthOptions } from './auth.js';
export { addMetricsRoute, addProbeRoutes } from './health.js';
export { createWorkerMonitorApp, serveHttp } from './worker-app.js';
export { DEFAULT_HTTP_TIMEOUTS, httpServerOptions, httpTimeoutIssues } from './http-timeouts.js';
export type { HttpTimeouts } from './http-timeouts.js';
export type { RunningHttpServer, WorkerMonitorDeps, WorkerMonitorOptions } from './worker-app.js';
export { createQueuesBoard, readQueueDepths, QUEUES_BASE_PATH } from './bull-board.js';
export { renderDashboardPage } from './dashboard-page.js';
export type { DashboardPageOptions } from './dashboard-page.js';
export { MemorySessionView } from './memory-session-reader.js';
export { createPrometheusMetrics } from './metrics.js';
export type { ExposedMetrics, PrometheusMetrics, PrometheusMetricsOptions, QueueDepth, QueueDepthSource } from './metrics.js';
export { DEFAULT_PAGE_SIZE, pageSessions } from '../core/session-view.js';
export type {
  CompactionEvent,
  FillPoint,
  ListSessionsOptions,
  ResetEvent,
  SessionActivity,
  SessionDetail,
  SessionLedger,
  SessionNote,
  SessionPage,
  SessionRow,
  SessionSort,
  SessionView,
} from '../core/session-view.js';
export type { CompactionLayer } from '../core/session-figures.js';
export { formatSessionsTable, formatSessionUsage } from './session-table.js';
