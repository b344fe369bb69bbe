/** The chat commands every channel answers. */
export const CHAT_COMMANDS = ['usage', 'status', 'compact', 'reset', 'pins', 'help'] as const;

/** One of {@link CHAT_COMMANDS}. */
export type ChatCommandName = (typeof CHAT_COMMANDS)[number];

/** A parsed chat command. */
export interface ChatCommand {
  name: ChatCommandName;
  /** What follows the command, trimmed (`/compact the refund` → `the refund`). */
  args: string;
}

const COMMAND_RE = /^\/([A-Za-z_]+)(?:@(\S+))?(?:\s+([\s\S]*))?$/;

/**
 * Parses a chat command: `/name`, `/name args`, or Telegram's `/name@botname args`. A command
 * addressed to another bot, or an unknown command, is not a command (it goes to the agent).
 */
export function parseCommand(text: string, botUsername?: string): ChatCommand | null {
  const match = COMMAND_RE.exec(text.trim());
  if (!match) return null;
  const name = (match[1] ?? '').toLowerCase();
  if (match[2] && botUsername && match[2].toLowerCase() !== botUsername.toLowerCase()) return null;
  if (!(CHAT_COMMANDS as readonly string[]).includes(name)) return null;
  return { name: name as ChatCommandName, args: (match[3] ?? '').trim() };
}

/** The `/help` text. */
export const HELP_TEXT = [
  'I am an AI assistant. Just write to me. Commands:',
  '/usage: tokens in and out, cost, how full the context is, compactions',
  '/status: model, context window, session age, whether I am busy',
  '/compact [focus]: summarise the conversation now (optionally focusing on something)',
  '/reset: start a fresh conversation (the old one stays in the transcript)',
  '/pins: the notes I keep for you and the facts pinned from earlier turns',
  '/help: this text',
].join('\n');
