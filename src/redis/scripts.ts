/**
 * The Lua scripts of chatgate, one documented file each in `<folder>/scripts/<name>-<numKeys>.lua` (KEYS,
 * ARGV and the reply in its header), loaded once and defined on each connection with ioredis
 * `defineCommand` (EVALSHA, loading the script on NOSCRIPT). Every script's keys share one hash
 * tag, so each runs on Redis Cluster; options travel as one JSON argument (ARGV[1]), payload
 * items that are stored as they are follow it. The budget script is the exception: its calls are on
 * every model call's path, so its arguments are positional, with no JSON to decode. Code shared by several scripts lives in
 * `scripts/includes/<name>.lua`, pulled in by a `--- @include "<name>"` line and assembled at load;
 * an include writes `'@script'` where the name of the script it is assembled into belongs.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RedisClient } from './client.js';

/** An include line: `--- @include "<name>"`, the name in lower-case-with-dashes. */
const INCLUDE_LINE = /^--- @include "([a-z0-9]+(?:-[a-z0-9]+)*)"\s*$/;
const INCLUDE_PREFIX = '--- @include';
/** Where an include names the script it is assembled into: the Lua string `'@script'`. */
const SCRIPT_NAME_SLOT = "'@script'";

/** Script name → its file in `src/redis/scripts/` (the number before `.lua` is its key count). */
const REDIS_SCRIPT_FILES = {
  ingestInbound: 'ingest-inbound-7.lua',
  countInWindow: 'count-in-window-1.lua',
  forgetPending: 'forget-pending-1.lua',
  claimInbox: 'claim-inbox-3.lua',
  steerInbox: 'steer-inbox-4.lua',
  deadLetterProcessing: 'dead-letter-processing-5.lua',
  requeueDeadLetters: 'requeue-dead-letters-2.lua',
  acquireLease: 'acquire-lease-2.lua',
  renewLease: 'renew-lease-1.lua',
  releaseLease: 'release-lease-1.lua',
  holdClaim: 'hold-claim-2.lua',
  commitSession: 'commit-session-9.lua',
  addUsage: 'add-usage-3.lua',
  inboxBytes: 'inbox-bytes-1.lua',
  appendWebReply: 'append-web-reply-1.lua',
  recordStep: 'record-step-2.lua',
  queueLayout: 'queue-layout-2.lua',
} as const;

/** The `/stop` requests' scripts, in `src/turn-stop/scripts/`. */
const TURN_STOP_SCRIPT_FILES = {
  requestStop: 'request-stop-4.lua',
  takeStop: 'take-stop-1.lua',
} as const;

/** The budgets' scripts, in `src/budget/scripts/`. */
const BUDGET_SCRIPT_FILES = {
  budget: 'budget-ledger-5.lua',
} as const;

/** The live replies' view-record scripts, in `src/live-reply/scripts/`. */
const LIVE_REPLY_SCRIPT_FILES = {
  beginLiveReplyCall: 'begin-live-reply-call-1.lua',
  endLiveReplyCall: 'end-live-reply-call-1.lua',
  markLiveReplyFinal: 'mark-live-reply-final-1.lua',
} as const;

/** The reply transport's scripts, in `src/outbound/scripts/`. */
const OUTBOUND_SCRIPT_FILES = {
  enterOutboundOrder: 'enter-outbound-order-1.lua',
  outboundAdd: 'outbound-add-3.lua',
  outboundAck: 'outbound-ack-2.lua',
  outboundRenew: 'outbound-renew-1.lua',
  outboundDelay: 'outbound-delay-3.lua',
  outboundFail: 'outbound-fail-4.lua',
  outboundPromote: 'outbound-promote-3.lua',
} as const;

/** The approvals' scripts, in `src/approvals/scripts/`. */
const APPROVAL_SCRIPT_FILES = {
  decideApproval: 'decide-approval-3.lua',
} as const;

/** The name of one of chatgate's Lua scripts. */
export type ScriptName = keyof typeof REDIS_SCRIPT_FILES | keyof typeof TURN_STOP_SCRIPT_FILES | keyof typeof OUTBOUND_SCRIPT_FILES
  | keyof typeof LIVE_REPLY_SCRIPT_FILES | keyof typeof APPROVAL_SCRIPT_FILES | keyof typeof BUDGET_SCRIPT_FILES;

/** A loaded script: its source and how many of its arguments are keys. */
interface LoadedScript {
  name: ScriptName;
  file: string;
  numberOfKeys: number;
  lua: string;
}

/** The folder of src/redis's own scripts (`src/redis/scripts`). */
export const SCRIPTS_DIR = new URL('./scripts/', import.meta.url);

/** The folders the `.lua` files are read from, one per feature, each with its scripts by name. */
export const SCRIPT_FOLDERS: ReadonlyArray<{ dir: URL; files: Readonly<Partial<Record<ScriptName, string>>> }> = [
  { dir: SCRIPTS_DIR, files: REDIS_SCRIPT_FILES },
  { dir: new URL('../outbound/scripts/', import.meta.url), files: OUTBOUND_SCRIPT_FILES },
  { dir: new URL('../turn-stop/scripts/', import.meta.url), files: TURN_STOP_SCRIPT_FILES },
  { dir: new URL('../live-reply/scripts/', import.meta.url), files: LIVE_REPLY_SCRIPT_FILES },
  { dir: new URL('../approvals/scripts/', import.meta.url), files: APPROVAL_SCRIPT_FILES },
  { dir: new URL('../budget/scripts/', import.meta.url), files: BUDGET_SCRIPT_FILES },
];

/** Where `--- @include "<name>"` finds `<name>.lua`: `src/redis/scripts/includes`. */
export const INCLUDES_DIR = new URL('./scripts/includes/', import.meta.url);

/** Every script, read once when this module is first imported. */
export const SCRIPTS: Readonly<Record<ScriptName, LoadedScript>> = Object.freeze(loadAll());

type ScriptCommand = (...keysAndArgs: Array<string | number>) => Promise<unknown>;

const defined = new WeakSet<RedisClient>();

/**
 * Runs script `name` on `redis` with `keys` (all sharing one hash tag) and `args`; the script is
 * defined on that connection the first time. @returns the script's raw reply.
 * @throws Error when `keys` does not match the script's key count; ReplyError from Redis.
 */
export async function runScript(redis: RedisClient, name: ScriptName, keys: readonly string[], args: ReadonlyArray<string | number> = []): Promise<unknown> {
  const script = SCRIPTS[name];
  if (keys.length !== script.numberOfKeys) throw new Error(`script ${name} takes ${script.numberOfKeys} keys (got ${keys.length})`);
  if (!defined.has(redis)) defineAll(redis);
  const command = (redis as unknown as Record<ScriptName, ScriptCommand>)[name];
  return command.call(redis, ...keys, ...args);
}

/** Runs script `name` with one JSON options argument followed by `items` (stored as they are). */
export async function runScriptWithOptions(redis: RedisClient, name: ScriptName, keys: readonly string[], options: object, items: readonly string[] = []): Promise<unknown> {
  return runScript(redis, name, keys, [JSON.stringify(options), ...items]);
}

function defineAll(redis: RedisClient): void {
  for (const script of Object.values(SCRIPTS)) redis.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
  defined.add(redis);
}

function loadAll(): Record<ScriptName, LoadedScript> {
  const entries = SCRIPT_FOLDERS.flatMap(({ dir, files }) => (Object.entries(files) as Array<[ScriptName, string]>).map(([name, file]): [ScriptName, LoadedScript] => {
    const match = /-(\d+)\.lua$/.exec(file);
    if (!match) throw new Error(`script file ${file} must be named <name>-<numKeys>.lua`);
    return [name, { name, file, numberOfKeys: Number(match[1]), lua: assembleScript(file, dir, INCLUDES_DIR, name) }];
  }));
  return Object.fromEntries(entries) as Record<ScriptName, LoadedScript>;
}

/**
 * Script `file` of `dir` with its includes assembled: each line `--- @include "<name>"` is replaced
 * by `<name>.lua` of `includesDir` (itself assembled, so an include may include another), with
 * `'@script'` in it replaced by the script's name `scriptName` as a Lua string. An include pulled
 * in a second time, directly or through another, is left out: its code comes once.
 * @throws Error naming the script and the file when an include does not exist, when a line
 * starting `--- @include` is not of that form, or when an include names the script and no
 * `scriptName` is given.
 */
export function assembleScript(file: string, dir: URL = SCRIPTS_DIR, includesDir: URL = INCLUDES_DIR, scriptName?: string): string {
  const included = new Set<string>();
  const expand = (source: string): string => source.split('\n').map((line) => {
    if (!line.startsWith(INCLUDE_PREFIX)) return line;
    const name = INCLUDE_LINE.exec(line)?.[1];
    if (name === undefined) throw new Error(`script ${file}: malformed include line '${line}' (write --- @include "<name>", <name> in lower-case-with-dashes)`);
    if (included.has(name)) return '';
    included.add(name);
    return expand(nameScript(file, name, readInclude(file, name, includesDir).replace(/\n$/, ''), scriptName));
  }).join('\n');
  return expand(readFileSync(new URL(file, dir), 'utf8'));
}

function nameScript(file: string, include: string, lua: string, scriptName: string | undefined): string {
  if (!lua.includes(SCRIPT_NAME_SLOT)) return lua;
  if (scriptName === undefined) throw new Error(`script ${file}: include "${include}" names the script, but no script name was given`);
  return lua.replaceAll(SCRIPT_NAME_SLOT, `'${scriptName}'`);
}

function readInclude(file: string, name: string, includesDir: URL): string {
  const path = new URL(`${name}.lua`, includesDir);
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw new Error(`script ${file} includes "${name}", but ${fileURLToPath(path)} does not exist (add it, or fix the name)`, { cause: err });
  }
}
