/**
 * The error family of chatgate. Every error carries a stable `code`; subclasses are chosen by what
 * the caller will do with them. Foreign errors are converted once, at the adapter boundary, keeping
 * `cause`. Messages never contain secrets.
 */

/** Base class: an error with a stable, machine-readable code. */
export class GatewayError extends Error {
  /** Stable identifier such as `CONFIG_INVALID` or `LLM_RATE_LIMITED`. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Invalid configuration: fix the named option and start again. */
export class ConfigError extends GatewayError {
  /** One line per bad option, each naming the option and the rule. */
  readonly issues: string[];

  constructor(issues: string[]) {
    super('CONFIG_INVALID', `invalid configuration:\n  - ${issues.join('\n  - ')}`);
    this.issues = issues;
  }
}

/** A platform (Telegram, Discord, web chat) refused or failed a call. */
export class ChannelError extends GatewayError {
  /** Whether retrying the same call later may succeed. */
  readonly retryable: boolean;
  /** How long the platform asked us to wait, when it said so. */
  readonly retryAfterMs?: number;

  constructor(message: string, options: { retryable: boolean; retryAfterMs?: number; cause?: unknown; code?: string }) {
    super(options.code ?? 'CHANNEL_FAILED', message, { cause: options.cause });
    this.retryable = options.retryable;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** The LLM endpoint failed a call. `kind` says what the caller should do. */
export class LlmError extends GatewayError {
  /** `context_length`: compact and retry; `transient`: back off and retry; `auth`/`permanent`: give up. */
  readonly kind: 'context_length' | 'transient' | 'auth' | 'permanent' | 'connection' | 'aborted';
  /** HTTP status, when there was a response. */
  readonly status?: number;
  /** How long the provider asked us to wait, when it said so. */
  readonly retryAfterMs?: number;

  constructor(
    message: string,
    options: { kind: LlmError['kind']; status?: number; retryAfterMs?: number; cause?: unknown },
  ) {
    super(`LLM_${options.kind.toUpperCase()}`, message, { cause: options.cause });
    this.kind = options.kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** A write to a session was refused because another worker holds (or took over) its lease. */
export class StaleCommitError extends GatewayError {
  constructor(sessionId: string, detail: string) {
    super('STALE_COMMIT', `commit refused for ${sessionId}: ${detail}`);
  }
}

/**
 * Data read from Redis is in a format version this chatgate does not read (another chatgate
 * version wrote it). The message names what was read, the version found and the one expected.
 */
export class StoredFormatError extends GatewayError {
  constructor(what: string, found: unknown, expected: number, fix: string) {
    super('STORED_FORMAT_UNKNOWN', `${what} has format version ${JSON.stringify(found) ?? 'none'}; this chatgate reads version ${expected}: ${fix}`);
  }
}

/** A spend limit holds: the call was not made. `notice` is the message the user reads. */
export class BudgetError extends GatewayError {
  /** What the user is told, e.g. "This chat has used today's budget of $2.00. It resets at …". */
  readonly notice: string;

  constructor(what: string, notice: string) {
    super('BUDGET_EXHAUSTED', `${what} not made: ${notice}`);
    this.notice = notice;
  }
}

/** A usage query that cannot be answered as asked (`--since`, `--by`): the message names the rule. */
export class UsageQueryError extends GatewayError {
  constructor(message: string) {
    super('USAGE_QUERY_INVALID', message);
  }
}
