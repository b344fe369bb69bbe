/**
 * The steps of the ingest pipeline (their order is `INGEST_STEPS` in ingest.ts) and the answers
 * they send. A step answers a message with a verdict, or hands it on with null.
 */
import { sessionKeyOf, type AllowList, type InboundMessage, type InboundVerdict } from '../core/inbound.js';
import { budgetMessage } from '../core/budget.js';
import { isUnreadableMarker } from '../budget/ledger.js';
import { countOf } from '../core/plural.js';
import { acceptInbound, countInWindow } from '../redis/ingest.js';
import { deniedKey, seenKey, sessionKeys } from '../redis/keys.js';
import { BudgetError } from '../errors.js';
import { runCommand, type CommandDeps } from './commands.js';
import { hygieneThenTurn, notify } from './ingest-after.js';
import type { IngestContext, IngestStep, Incoming } from './ingest-context.js';
import { NOTHING_TO_STOP, stopTurn } from '../turn-stop/stop-command.js';
import { busyModePort, busyModeTag, interruptIfAsked } from './ingest-busy.js';
import { retryTurn } from './retry-turn.js';
import { answerApprovalCommand, denyPending, isApprovalCommand } from './approval-commands.js';

/** An unlisted user: told once a day in private chats, never in groups. */
export const refuseUnlisted: IngestStep = async (ctx, { message, sessionId }) => {
  if (isAllowed(ctx.options.allow[message.channel], message.userId)) return null;
  const { deps, options } = ctx;
  const reason = `You are not authorised to use this bot (your ${message.channel} user id is ${message.userId}). Ask its operator to add you.`;
  ctx.log.info({ channel: message.channel, userId: message.userId, chatType: message.chatType }, 'unlisted user refused');
  if (message.chatType === 'group' || message.refusalsAnswered) return { outcome: 'denied', reason }; // silence in groups
  const marker = deniedKey(message.channel, message.userId, options.keyPrefix);
  if ((await deps.redis.set(marker, '1', 'EX', 86_400, 'NX')) === null) return { outcome: 'denied', reason }; // told already today
  try {
    await notify(ctx, message, sessionId, reason, 'denied');
  } catch (err) {
    await deps.redis.del(marker).catch(() => undefined);
    throw err;
  }
  return { outcome: 'denied', reason };
};

/** A re-delivery: nothing to add, but a turn is made sure of in case the first delivery died before enqueueing it. */
export const dropRedelivery: IngestStep = async (ctx, { sessionId, message, oneScript }) => {
  if (oneScript) return null;
  if ((await ctx.deps.redis.exists(seenKey(sessionId, message.id, ctx.options.keyPrefix))) === 0) return null;
  return duplicate(ctx, sessionId, await ctx.deps.redis.llen(sessionKeys(sessionId, ctx.options.keyPrefix).inbox));
};

/** Counts the message in its sender's window, and in its address's when the adapter knows it. */
export const countRate: IngestStep = async (ctx, incoming) => {
  const { rate } = incoming;
  if (incoming.oneScript || rate === null) return null;
  const counts = await Promise.all(rate.limit.keys.map((key) => countInWindow(ctx.deps.redis, key, rate.limit.ttlSeconds)));
  return counts.some((count) => count > rate.limit.limit) ? refuseRate(ctx, incoming) : null;
};

/** A message over the size limit (counted in the rate window first). */
export const refuseTooLong: IngestStep = async (ctx, incoming) => {
  if (incoming.oneScript || incoming.chars <= ctx.options.maxMessageChars) return null;
  return refuseSize(ctx, incoming);
};

/**
 * A chat command, answered once per message id (`/compact` and `/btw` in the background: a model
 * call takes its time). With `answerInPlace` the answer is in the verdict, not a notice; a
 * background command's still comes as a notice.
 */
export const answerCommand: IngestStep = async (ctx, incoming) => {
  const { command, message, sessionId } = incoming;
  if (command === null) return null;
  const approvals = ctx.deps.approvals;
  if (approvals && isApprovalCommand(command)) {
    let answer: InboundVerdict['answer'];
    const verdict = await answerOnce(ctx, incoming, 'command', async () => {
      answer = await answerApprovalCommand(approvals, sessionId, message, command);
      // A button press is answered where it was pressed (the adapter shows the verdict's answer).
      if (!message.answerInPlace) await notify(ctx, message, sessionId, answer.text, `cmd-${command.name}`);
    });
    return answer && message.answerInPlace ? { ...verdict, answer } : verdict;
  }
  let inPlace: string | undefined;
  const verdict = await answerOnce(ctx, incoming, 'command', async () => {
    // A summary or a side question takes a model call.
    const callsModel = command.name === 'compact' || command.name === 'btw';
    const answer = async () => {
      const reply = await runCommand(commandDeps(ctx, message), sessionId, command);
      if (reply === null) return;
      if (message.answerInPlace && !callsModel) inPlace = reply;
      else await notify(ctx, message, sessionId, reply, `cmd-${command.name}`);
    };
    if (!callsModel) return answer();
    // Answered in the background, the platform acknowledged now.
    const failure = command.name === 'compact'
      ? 'The compaction failed unexpectedly; nothing was changed. Please try /compact again in a while.'
      : 'The side question could not be answered right now (the model did not answer). Please ask again in a while.';
    void answer().catch(async (err: unknown) => {
      // A used-up budget is no failure: the sender reads which limit holds and until when.
      const overBudget = err instanceof BudgetError;
      if (overBudget) ctx.log.info({ channel: message.channel, userId: message.userId, sessionId }, `${command.name} refused: budget used up`);
      else ctx.outage.error({ err, sessionId }, `${command.name} command failed`);
      await notify(ctx, message, sessionId, overBudget ? err.notice : failure, `cmd-${command.name}-failed`).catch(() => undefined);
    });
  });
  return inPlace === undefined ? verdict : { ...verdict, answer: { text: inPlace, settled: false } };
};

/** A budget used up (user, chat or deployment): answered at once from the counters, no turn queued, no model call. */
export const refuseOverBudget: IngestStep = async (ctx, { message, sessionId, nowMs }) => {
  const budget = ctx.deps.budget;
  if (!budget) return null;
  const breach = await budget.ledger.check({ user: userOf(message), chat: sessionId });
  if (breach === null) return null;
  if (isUnreadableMarker(breach)) {
    // A marker only answers early: one this version cannot read lets the message through, and the worker's reserve decides.
    ctx.log.warn({ sessionId, marker: breach.unreadable }, 'budget marker unreadable: the message goes on to the worker, whose reserve decides');
    return null;
  }
  const reason = budgetMessage(breach, nowMs, budget.timeZone);
  ctx.log.info({ channel: message.channel, userId: message.userId, sessionId, budgetLevel: breach.level, period: breach.period }, 'message answered: budget used up');
  await refuse(ctx, message, sessionId, reason, 'budget');
  return { outcome: 'over_budget', reason };
};

/** Media the bot cannot read: the adapter's short answer, once per message, through the outbound queue. */
export const answerUnsupported: IngestStep = async (ctx, incoming) => {
  const { message, sessionId } = incoming;
  const reply = message.unsupportedReply;
  if (reply === undefined) return null;
  const verdict = await answerOnce(ctx, incoming, 'unsupported', () => notify(ctx, message, sessionId, reply, 'unsupported', true));
  if (verdict.outcome === 'unsupported') logUploadRefused(ctx, incoming, 'unsupported');
  return verdict;
};

/** One line per refused upload: which user, what files (type and size, never names), and why. */
function logUploadRefused(ctx: IngestContext, { message, sessionId, attachments }: Incoming, outcome: 'too_large' | 'unsupported'): void {
  const files = attachments.map((file) => ({ kind: file.kind, mimeType: file.mimeType, size: file.size }));
  ctx.log.info({ channel: message.channel, userId: message.userId, sessionId, outcome, files }, 'upload refused');
}

/** Downloads and stores the message's files (src/gateway/attachments.ts); refuses unreadable or too large ones. */
export const takeFiles: IngestStep = async (ctx, incoming) => {
  const { deps } = ctx;
  if (!deps.attachments || incoming.attachments.length === 0) return null;
  const files = await deps.attachments.take(incoming.message, incoming.sessionId);
  if (files.ok) {
    incoming.attachments = files.attachments;
    return null;
  }
  logUploadRefused(ctx, incoming, files.outcome);
  await refuse(ctx, incoming.message, incoming.sessionId, files.reason, files.outcome);
  return { outcome: files.outcome, reason: files.reason };
};

/**
 * Accepts the message into its session's inbox (src/redis/ingest.ts; a plain message's dedupe,
 * rate count and size verdict in the same script). Durable then: the platform gets its
 * acknowledgement at once; hygiene and then the turn's `add` run in the background, one at a time
 * per session, and other chats never wait for them. A crash in between is caught by the pending sweeper.
 */
export const acceptIntoInbox: IngestStep = async (ctx, incoming) => {
  const { deps, options } = ctx;
  const { message, sessionId, oneScript } = incoming;
  const { clientAddress: _address, refusalsAnswered: _answered, ...rest } = message;
  // The channel's busy mode travels with the message; the chat's /mode, read by the worker's steer take, wins.
  const tagged = busyModeTag(ctx, message);
  const result = await acceptInbound(deps.redis, {
    sessionId, message: { ...rest, attachments: incoming.attachments, ...tagged }, keyPrefix: options.keyPrefix, dedupeTtlSeconds: ctx.ttl, nowMs: incoming.nowMs,
    rate: oneScript ? incoming.rate?.limit : null, tooLong: oneScript && incoming.chars > options.maxMessageChars,
  });
  switch (result.kind) {
    case 'duplicate': return duplicate(ctx, sessionId, result.inboxLength);
    case 'rate_limited': return refuseRate(ctx, incoming);
    case 'too_long': return refuseSize(ctx, incoming);
    case 'accepted':
      if (message.event === undefined) await interruptIfAsked(ctx, message, sessionId, result.figures.meta.chatSettings);
      ctx.background.run(sessionId, () => hygieneThenTurn(ctx, sessionId, message, result.figures));
      return { outcome: 'accepted' };
  }
};

async function duplicate(ctx: IngestContext, sessionId: string, inboxLength: number): Promise<InboundVerdict> {
  if (inboxLength > 0) await ctx.deps.producer.enqueueTurn(sessionId);
  return { outcome: 'duplicate' };
}

async function refuseRate(ctx: IngestContext, { message, sessionId, rate }: Incoming): Promise<InboundVerdict> {
  const retryAfterMs = rate!.retryAfterMs;
  const held = ctx.rateLines.admit(`${message.channel}:${message.userId}`);
  if (held !== null) ctx.log.info({ channel: message.channel, userId: message.userId, sessionId, limitPerMinute: ctx.options.rateLimitPerMinute, retryAfterMs, refusedSinceLastLine: held }, 'user rate-limited: message refused');
  const reason = `You are sending messages faster than ${ctx.options.rateLimitPerMinute} a minute, so this one was not read. Wait ${Math.ceil(retryAfterMs / 1000)} s, then send it again.`;
  await refuse(ctx, message, sessionId, reason, 'rate');
  return { outcome: 'rate_limited', reason, retryAfterMs };
}

async function refuseSize(ctx: IngestContext, { message, sessionId, chars }: Incoming): Promise<InboundVerdict> {
  const reason = `Your message has ${countOf(chars, 'character')}; the limit is ${ctx.options.maxMessageChars.toLocaleString('en-US')}. Please shorten it or split it into several messages.`;
  await refuse(ctx, message, sessionId, reason, 'size');
  return { outcome: 'too_long', reason };
}

/** Answers a refused message, quoting it (one notice per message, a re-delivery included), unless the adapter shows it. */
async function refuse(ctx: IngestContext, message: InboundMessage, sessionId: string, reason: string, tag: string): Promise<void> {
  if (message.refusalsAnswered) return;
  await notify(ctx, message, sessionId, reason, tag, true);
}

/** Marks the message seen, then answers it; a failed answer unmarks it, so the platform re-delivers it. */
async function answerOnce(ctx: IngestContext, { message, sessionId }: Incoming, outcome: 'command' | 'unsupported', answer: () => Promise<void>): Promise<InboundVerdict> {
  const seen = seenKey(sessionId, message.id, ctx.options.keyPrefix);
  if ((await ctx.deps.redis.set(seen, String(message.receivedAt), 'EX', ctx.ttl, 'NX')) === null) return { outcome: 'duplicate' };
  try {
    await answer();
  } catch (err) {
    await ctx.deps.redis.del(seen).catch(() => undefined); // not answered: let the platform re-deliver it
    throw err;
  }
  return { outcome };
}

/** The command handlers for one command message: `/stop` and `/retry` act on this message's session. */
function commandDeps(ctx: IngestContext, message: InboundMessage): CommandDeps {
  const { deps, options } = ctx;
  const accept = (retried: InboundMessage) => acceptInbound(deps.redis, { sessionId: sessionKeyOf(retried, options.groupMode), message: retried, keyPrefix: options.keyPrefix, dedupeTtlSeconds: ctx.ttl, nowMs: ctx.now() });
  return {
    ...deps.commands, ops: deps.ops, user: userOf(message),
    ...(deps.budget ? { budgets: budgetPort(deps.budget, userOf(message)) } : {}),
    stop: async (sessionId) => {
      const answer = await stopTurn(deps.redis, sessionId, options.keyPrefix, ctx.log);
      // Questions the turn waits on are denied: the woken turn ends, answering "Stopped.".
      const denied = deps.approvals ? await denyPending(deps.approvals, sessionId) : 0;
      if (denied > 0 && answer === NOTHING_TO_STOP) return `Denied ${countOf(denied, 'tool call')} waiting for approval.`;
      // A stopped turn answers "Stopped." itself; an adapter that answers in place still needs an answer.
      return answer ?? (message.answerInPlace ? STOPPING : null);
    },
    // `/reset` ends a turn waiting for approval: its questions are cancelled under the reset's lease (src/session/session-ops.ts).
    ...(deps.approvals ? { cancelQuestions: (sessionId: string) => denyPending(deps.approvals!, sessionId, 'reset') } : {}),
    busyMode: busyModePort(ctx, message),
    retry: (sessionId) => retryTurn(deps.retry, sessionId, message, accept, () => ctx.background.run(sessionId, () => hygieneThenTurn(ctx, sessionId, message))),
  };
}

/** `/stop`'s answer in place while a turn runs (the turn answers "Stopped."). */
const STOPPING = 'Stopping the running turn.';

/** The budget subject of a message's sender: `<channel>:<userId>`. */
function userOf(message: InboundMessage): string {
  return `${message.channel}:${message.userId}`;
}

function isAllowed(list: AllowList | undefined, userId: string): boolean {
  if (list === undefined || list === '*') return true;
  return list.includes('*') || list.includes(userId);
}

/** `/usage`'s view of the budgets of `user` in a chat: the counters and the marker that holds, if any. */
function budgetPort(budget: NonNullable<IngestContext['deps']['budget']>, user: string): NonNullable<CommandDeps['budgets']> {
  return {
    state: (sessionId) => budget.ledger.state({ user, chat: sessionId }),
    // A marker this version cannot read holds nothing (the worker's reserve decides): not shown as blocked.
    blocked: async (sessionId) => {
      const found = await budget.ledger.check({ user, chat: sessionId });
      return isUnreadableMarker(found) ? null : found;
    },
    timeZone: budget.timeZone,
  };
}
