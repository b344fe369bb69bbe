/** The chat commands every channel answers (canonical names; see {@link COMMAND_ALIASES}). */
export const CHAT_COMMANDS = ['start', 'help', 'usage', 'status', 'compact', 'reset', 'stop', 'retry', 'pins', 'approve', 'deny', 'revoke', 'mode', 'btw'] as const;

/** One of {@link CHAT_COMMANDS}. */
export type ChatCommandName = (typeof CHAT_COMMANDS)[number];

/**
 * Commands that cost a model call (`/btw`, `/compact`) or ask the last exchange again (`/retry`): they
 * count toward the per-user rate limit as a message does. The others are answered from Redis alone.
 */
export const MODEL_COMMANDS: readonly ChatCommandName[] = Object.freeze(['btw', 'compact', 'retry']);

/** Other names people type for a command: `/new` (grammY and most bots) is `/reset`, `/compress` (Hermes) is `/compact`. */
export const COMMAND_ALIASES: Readonly<Record<string, ChatCommandName>> = { new: 'reset', compress: 'compact' };

/** A parsed chat command. */
export interface ChatCommand {
  /** The canonical name (`/new` parses as `reset`). */
  name: ChatCommandName;
  /** What follows the command, trimmed (`/compact the refund` → `the refund`). */
  args: string;
}

/** One line of the command menu: what Telegram's `setMyCommands` registers and `/help` lists. */
export interface CommandEntry {
  /** The name as typed, without the slash (lower case, ≤ 32 characters: Telegram's rule). */
  command: string;
  /** One short line (≤ 256 characters: Telegram's rule). */
  description: string;
  /** Shown in `/help` after the name, e.g. `[focus]`. */
  usage?: string;
}

/** The command menu, in the order people are shown it (aliases included): each name with its one line. */
const MENU: Readonly<Record<string, string>> = {
  new: 'Start a fresh conversation (the old one stays in the transcript)',
  stop: 'Stop the reply being written now',
  retry: 'Ask your last message again and drop the answer it got',
  mode: 'What a message does while I am answering: join my reply (steer), wait its turn (queue) or restart it (interrupt)',
  btw: 'A side question, answered from this conversation without entering it',
  compact: 'Summarise the conversation now, optionally around a focus',
  usage: 'Tokens in and out, cost, how full the context is, compactions, budget left',
  status: 'Model, context window, session age, whether I am busy',
  pins: 'The notes I keep for you, the facts pinned from earlier turns, the tools you always approve',
  approve: 'Let a tool call I asked about run (add "always" to allow that tool in this chat)',
  deny: 'Refuse a tool call I asked about',
  revoke: 'Make a tool you always approved ask again',
  help: 'What I can do and these commands',
};

/** What follows a command that takes arguments, as `/help` shows it. */
const USAGE: Readonly<Record<string, string>> = {
  mode: '[steer|queue|interrupt|default]',
  btw: '<question>',
  compact: '[focus]',
  approve: '<id> [always] | all',
  deny: '<id> | all',
  revoke: '<tool>',
};

/** The command menu, in the order people are shown it; aliases included. */
export const COMMAND_MENU: readonly CommandEntry[] = Object.entries(MENU).map(([command, description]) => (USAGE[command] ? { command, description, usage: USAGE[command] } : { command, description }));

/** Every name a command answers to (canonical names and aliases), lower case. */
export const COMMAND_NAMES: readonly string[] = [...CHAT_COMMANDS, ...Object.keys(COMMAND_ALIASES)];

const COMMAND_RE = /^\/([A-Za-z_]+)(?:@(\S+))?(?:\s+([\s\S]*))?$/;

/**
 * Parses a chat command: `/name`, `/name args`, or Telegram's `/name@botname args`. Aliases give
 * their canonical name. A command addressed to another bot, or an unknown command, is not a command
 * (it goes to the agent).
 */
export function parseCommand(text: string, botUsername?: string): ChatCommand | null {
  const match = COMMAND_RE.exec(text.trim());
  if (!match) return null;
  const typed = (match[1] ?? '').toLowerCase();
  if (match[2] && botUsername && match[2].toLowerCase() !== botUsername.toLowerCase()) return null;
  const name = COMMAND_ALIASES[typed] ?? typed;
  if (!(CHAT_COMMANDS as readonly string[]).includes(name)) return null;
  return { name: name as ChatCommandName, args: (match[3] ?? '').trim() };
}

const COMMAND_LINES = [
  ...COMMAND_MENU.map((entry) => `/${entry.command}${entry.usage ? ` ${entry.usage}` : ''}: ${entry.description}`),
  'Also: /reset is /new, /compress is /compact.',
];

/** The `/help` text. */
export const HELP_TEXT = ['I am an AI assistant. Just write to me. Commands:', ...COMMAND_LINES].join('\n');

/** The `/start` text: the greeting a new user sees first, then the commands. */
export const START_TEXT = ['Hello! I am an AI assistant: write to me in your own words and I answer here.', 'Commands:', ...COMMAND_LINES].join('\n');
