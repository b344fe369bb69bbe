import type { Config } from '../config.js';
import { createTurnProducer } from '../queue/producer.js';
import { resolveQueueNames } from '../queue/names.js';
import { readDeadLetters, requeueDeadLetters, type DeadLetter } from '../redis/dead-letters.js';
import { sessionKeys, type SessionKeys } from '../redis/keys.js';
import { EXIT, type CliIo, type CliRedis } from './context.js';
import { noSession, withRedis } from './sessions.js';

/**
 * `chatgate failed <session>`: the session's dead letters (messages of turns that failed for
 * good), oldest first — one line each, or a JSON array with `--json`. Exit 1 for an unknown session.
 */
export function failedCommand(io: CliIo, sessionId: string, flags: { json?: boolean }): Promise<number> {
  return withKnownSession(io, sessionId, async (_config, conn, keys) => {
    const letters = await readDeadLetters(conn.redis, keys);
    if (flags.json) {
      io.out(JSON.stringify(letters.map((letter) => letter.message ?? { raw: letter.raw }), null, 2));
      return EXIT.ok;
    }
    if (letters.length === 0) io.err(`chatgate: ${sessionId} has no failed messages`);
    for (const letter of letters) io.out(formatDeadLetter(letter));
    return EXIT.ok;
  });
}

/**
 * `chatgate retry <session>`: moves the dead letters back to the front of the inbox (in their
 * order, before anything waiting) and enqueues a turn for the session. Exit 1 for an unknown session.
 */
export function retryCommand(io: CliIo, sessionId: string): Promise<number> {
  return withKnownSession(io, sessionId, async (config, conn, keys) => {
    const moved = await requeueDeadLetters(conn.redis, keys);
    if (moved === 0) {
      io.err(`chatgate: ${sessionId} has no failed messages to retry`);
      return EXIT.ok;
    }
    const producer = createTurnProducer({ redis: conn.redis }, {
      ...resolveQueueNames({ queuePrefix: config.redis.queuePrefix, queueShards: config.redis.queueShards }), keyPrefix: config.redis.keyPrefix, groupMode: config.groupMode,
    });
    try {
      await producer.enqueueTurn(sessionId);
    } finally {
      await producer.close();
    }
    io.out(`${sessionId}: ${moved} failed message${moved === 1 ? '' : 's'} back in the inbox, a turn enqueued`);
    return EXIT.ok;
  });
}

/** One dead letter as a line: when it arrived, who sent it, its id and text (multi-line indented). */
export function formatDeadLetter(letter: DeadLetter): string {
  if (!letter.message) return `(not a message) ${letter.raw}`;
  const m = letter.message;
  const when = Number.isFinite(m.receivedAt) ? new Date(m.receivedAt).toISOString().replace('T', ' ').slice(0, 19) : '?';
  return `${when}  ${m.userName ?? m.userId ?? '?'} [${m.id}]: ${m.text.replace(/\n/g, '\n    ')}`;
}

/** Runs `body` when the session exists (it has meta or dead letters); otherwise exit 1. */
function withKnownSession(io: CliIo, sessionId: string, body: (config: Config, conn: CliRedis, keys: SessionKeys) => Promise<number>): Promise<number> {
  return withRedis(io, async (config, conn) => {
    const keys = sessionKeys(sessionId, config.redis.keyPrefix);
    const [hasMeta, failed] = await Promise.all([conn.redis.hexists(keys.meta, 'version'), conn.redis.llen(keys.failed)]);
    if (hasMeta === 0 && failed === 0) return noSession(io, sessionId);
    return body(config, conn, keys);
  });
}
