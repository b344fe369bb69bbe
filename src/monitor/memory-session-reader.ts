import { pageSessions, type ListSessionsOptions, type SessionDetail, type SessionPage, type SessionView } from '../core/session-view.js';

/**
 * A {@link SessionView} over sessions held in memory: the test double of the Redis view, and a
 * way to serve a fixed set of sessions (the dashboard e2e test seeds it).
 */
export class MemorySessionView implements SessionView {
  private readonly sessions = new Map<string, SessionDetail>();

  /** Starts with the given sessions. */
  constructor(sessions: Iterable<SessionDetail> = []) {
    for (const detail of sessions) this.put(detail);
  }

  /** Adds or replaces a session (keyed by `detail.session.id`). */
  put(detail: SessionDetail): void {
    this.sessions.set(detail.session.id, structuredClone(detail));
  }

  /** Removes a session; true when it existed. */
  delete(id: string): boolean {
    return this.sessions.delete(id);
  }

  async listSessions(options?: ListSessionsOptions): Promise<SessionPage> {
    const rows = [...this.sessions.values()].map((detail) => detail.session);
    return structuredClone(pageSessions(rows, options));
  }

  async getSession(id: string): Promise<SessionDetail | null> {
    const detail = this.sessions.get(id);
    return detail ? structuredClone(detail) : null;
  }
}
