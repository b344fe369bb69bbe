import type { CallScope } from '../core/budget.js';
import type { CompactionState } from '../core/compaction/compaction-types.js';
import { toCompactionState } from '../core/compaction/compaction-state.js';
import type { ChatMessage } from '../core/messages.js';
import type { CommitChange, MetaUpdate, SessionMeta, SessionSnapshot, SessionStore, StoredEntry } from '../redis/session-store.js';
import { requestTokens } from '../redis/session-store.js';
import type { UsageDelta } from '../redis/usage.js';

type Change = Omit<CommitChange, 'expectedVersion' | 'fence' | 'meta' | 'projection'> & { meta?: MetaUpdate };

/**
 * The running turn's view of its session: the projection and meta as last committed, plus the
 * lease's fencing token. Every write goes through {@link TurnState.append} or
 * {@link TurnState.replace}, which commit atomically and then update the local mirror.
 */
export class TurnState {
  entries: StoredEntry[];
  meta: SessionMeta;
  compaction: CompactionState;
  /** Whom this work's model calls count for in the budgets: passed with each call (a summary's too). */
  readonly callScope: CallScope;

  /**
   * @param user who the turn's usage is for in the rollups (`<channel>:<userId>`, the budget's user);
   * none for work no user asked for (gateway hygiene, the CLI).
   * @param callScope whom its model calls count for; default the chat and `user`. Gateway hygiene
   * and idle compaction name the user who caused them here, while their usage has none in the rollups.
   */
  constructor(private readonly store: SessionStore, readonly sessionId: string, snapshot: SessionSnapshot, readonly fence: number, readonly user?: string, callScope?: CallScope) {
    this.callScope = callScope ?? { chat: sessionId, ...(user ? { user } : {}) };
    this.entries = snapshot.entries;
    this.meta = snapshot.meta;
    this.compaction = toCompactionState(snapshot.meta.compaction);
  }

  /** The projection's messages. */
  messages(): ChatMessage[] {
    return this.entries.map((entry) => entry.message);
  }

  /** Size of the next request: the provider's last report plus what was appended since. */
  requestTokens(overheadTokens: number): number {
    return requestTokens({ meta: this.meta }, overheadTokens);
  }

  /** Appends entries (their tokens count as "appended since the report") and commits. */
  async append(entries: StoredEntry[], change: Change = {}): Promise<void> {
    const added = entries.reduce((sum, entry) => sum + entry.tokens, 0);
    const meta: MetaUpdate = { appendedTokensSince: (change.meta?.appendedTokensSince ?? this.meta.appendedTokensSince) + added, ...withoutAppended(change.meta) };
    await this.commit({ ...change, meta, projection: { append: entries } });
    this.entries = [...this.entries, ...entries];
    this.meta.projectionTokens += added;
  }

  /** Replaces the projection (a compaction) and commits; the provider report is void afterwards. */
  async replace(entries: StoredEntry[], compaction: CompactionState, change: Change = {}): Promise<void> {
    const meta: MetaUpdate = { ...change.meta, compaction, lastPromptTokens: 0, appendedTokensSince: 0 };
    await this.commit({ ...change, meta, projection: { replace: entries } });
    this.entries = entries;
    this.compaction = compaction;
    this.meta.projectionTokens = entries.reduce((sum, entry) => sum + entry.tokens, 0);
  }

  /** Adds usage to the session's ledger and rollups outside a commit (unfenced): for model calls whose work was not committed. */
  async addUsage(usage: UsageDelta): Promise<void> {
    await this.store.addUsage(this.sessionId, usage, this.user);
  }

  /** Commits without touching the projection. */
  async commitOnly(change: Change): Promise<void> {
    await this.commit(change);
  }

  private async commit(change: Change & { projection?: CommitChange['projection'] }): Promise<void> {
    const version = await this.store.commit(this.sessionId, { ...change, expectedVersion: this.meta.version, fence: this.fence, ...(this.user ? { user: this.user } : {}) });
    this.meta = { ...this.meta, ...change.meta, version } as SessionMeta;
    if (change.meta?.compaction) this.compaction = change.meta.compaction;
  }
}

function withoutAppended(meta: MetaUpdate | undefined): MetaUpdate {
  if (!meta) return {};
  const { appendedTokensSince: _ignored, ...rest } = meta;
  return rest;
}
