/** How one part stands: `down` makes `chatgate status` exit 1; `warn` needs a look; `skip` could not be judged. */
export type StatusLevel = 'ok' | 'warn' | 'down' | 'skip';

/** One line of `chatgate status`. */
export interface StatusCheck {
  name: 'config' | 'redis' | 'gateway' | 'workers' | 'mcp' | 'channels' | 'leases' | 'llm' | 'queues' | 'failed' | 'sessions' | 'budgets' | 'versions';
  status: StatusLevel;
  detail: string;
  /** What to do about it. */
  fix?: string;
}
