/**
 * What a message does when it arrives while its session's turn runs (its "busy mode"), and the
 * chat's own choice of it (`/mode`), stored in the session's meta as versioned JSON.
 */
/** The busy modes: `steer` joins the running turn, `queue` waits for the next one, `interrupt` stops it and starts over. */
export const BUSY_MODES = ['steer', 'queue', 'interrupt'] as const;

/** One of {@link BUSY_MODES}. */
export type BusyMode = (typeof BUSY_MODES)[number];

/** The deployment's default busy mode. */
export const DEFAULT_BUSY_MODE: BusyMode = 'steer';

/** The busy modes a gateway applies: the deployment's, and per channel (by channel name) where it differs. */
export interface BusyModeDefaults {
  mode: BusyMode;
  channels?: Partial<Record<string, BusyMode>>;
}

/** The version of {@link ChatSettings} this code writes and reads. */
export const CHAT_SETTINGS_VERSION = 1;

/** A chat's own settings (meta field `chatSettings`): what its users chose with chat commands. */
export interface ChatSettings {
  v: typeof CHAT_SETTINGS_VERSION;
  /** `/mode`: the chat's busy mode; absent: the channel's or the deployment's. */
  busyMode?: BusyMode;
}

/** Whether `value` names a busy mode. */
export function isBusyMode(value: unknown): value is BusyMode {
  return typeof value === 'string' && (BUSY_MODES as readonly string[]).includes(value);
}

/**
 * Parses the stored `chatSettings` field (absent: none chosen).
 * @throws Error naming the version when it is not {@link CHAT_SETTINGS_VERSION}, or when the JSON is malformed.
 */
export function parseChatSettings(raw: string | null | undefined): ChatSettings {
  if (raw === null || raw === undefined || raw === '') return { v: CHAT_SETTINGS_VERSION };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new Error('chatSettings is not JSON');
  }
  const v = (value as { v?: unknown } | null)?.v;
  if (v !== CHAT_SETTINGS_VERSION) throw new Error(`chatSettings version ${String(v)} is not known (this version reads ${CHAT_SETTINGS_VERSION})`);
  const mode = (value as { busyMode?: unknown }).busyMode;
  if (mode !== undefined && !isBusyMode(mode)) throw new Error(`chatSettings busyMode ${String(mode)} is not a busy mode`);
  return mode === undefined ? { v } : { v, busyMode: mode };
}

/** The busy mode of a channel's messages before any chat's choice. */
export function channelBusyMode(defaults: BusyModeDefaults, channel: string): BusyMode {
  return defaults.channels?.[channel] ?? defaults.mode;
}

/** The busy mode that holds for a message: the chat's choice, else the channel's, else the deployment's. */
export function effectiveBusyMode(settings: ChatSettings, defaults: BusyModeDefaults, channel: string): BusyMode {
  return settings.busyMode ?? channelBusyMode(defaults, channel);
}

/**
 * Parses `CHATGATE_BUSY_MODE`: a mode, optionally followed by per-channel ones
 * (`steer,discord=queue`). @returns null when it is not of that form.
 */
export function parseBusyModeOption(value: string, channels: readonly string[]): BusyModeDefaults | null {
  const [first, ...rest] = value.split(',').map((part) => part.trim());
  if (!isBusyMode(first)) return null;
  const byChannel: Partial<Record<string, BusyMode>> = {};
  for (const item of rest) {
    const [channel, mode] = item.split('=').map((part) => part.trim());
    if (!channels.includes(channel!) || !isBusyMode(mode)) return null;
    byChannel[channel!] = mode;
  }
  return rest.length > 0 ? { mode: first, channels: byChannel } : { mode: first };
}
