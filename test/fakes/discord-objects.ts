/**
 * The fake Discord's world and the API objects it sends (users, channels, messages, GUILD_CREATE),
 * shaped as Discord's v10 API shapes them.
 */

/** Ids of the fake world: one guild with a text channel and a thread, and a DM channel. */
export const FAKE_DISCORD_IDS = {
  bot: '900000000000000001',
  application: '900000000000000002',
  guild: '900000000000000010',
  textChannel: '900000000000000011',
  thread: '900000000000000012',
  dmChannel: '900000000000000020',
  user: '900000000000000030',
} as const;

/** Discord's channel types the fake world has. */
export const CHANNEL_TYPES = { text: 0, dm: 1, publicThread: 11 } as const;

/** A message of the bot as the API returns it. */
export function messageObject(id: string, channelId: string, content: string, edited: boolean): Record<string, unknown> {
  return {
    id, channel_id: channelId, content, author: user(FAKE_DISCORD_IDS.bot, 'chatgate', true), timestamp: new Date().toISOString(),
    edited_timestamp: edited ? new Date().toISOString() : null, tts: false, mention_everyone: false, mentions: [], mention_roles: [], attachments: [], embeds: [], pinned: false, type: 0, flags: 0,
  };
}

/** A user object (the user named `ada` has the global name Ada Lovelace). */
export function user(id: string, username: string, bot: boolean): Record<string, unknown> {
  return { id, username, discriminator: '0', global_name: username === 'ada' ? 'Ada Lovelace' : null, avatar: null, bot, flags: 0 };
}

/** The channel object of one of the fake world's channels, or undefined for an unknown id. */
export function channelObject(id: string, lastMessageId: string | null = null): Record<string, unknown> | undefined {
  const guildChannel = { guild_id: FAKE_DISCORD_IDS.guild, position: 0, permission_overwrites: [], nsfw: false, rate_limit_per_user: 0, last_message_id: lastMessageId };
  if (id === FAKE_DISCORD_IDS.textChannel) return { id, type: CHANNEL_TYPES.text, name: 'general', parent_id: null, topic: null, ...guildChannel };
  if (id === FAKE_DISCORD_IDS.thread) {
    return {
      id, type: CHANNEL_TYPES.publicThread, name: 'a thread', parent_id: FAKE_DISCORD_IDS.textChannel, owner_id: FAKE_DISCORD_IDS.user, message_count: 0, member_count: 1,
      thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: new Date(0).toISOString(), locked: false }, ...guildChannel,
    };
  }
  if (id === FAKE_DISCORD_IDS.dmChannel) return { id, type: CHANNEL_TYPES.dm, last_message_id: null, recipients: [user(FAKE_DISCORD_IDS.user, 'ada', false)] };
  return undefined;
}

/** The GUILD_CREATE of the fake guild, with each channel's newest message. */
export function guildCreate(lastMessageId: (channelId: string) => string | null): Record<string, unknown> {
  const { guild } = FAKE_DISCORD_IDS;
  return {
    id: guild, name: 'Fake Guild', icon: null, owner_id: FAKE_DISCORD_IDS.user, unavailable: false, member_count: 2, large: false, features: [],
    roles: [{ id: guild, name: '@everyone', permissions: '1071698660929', position: 0, color: 0, hoist: false, managed: false, mentionable: false, flags: 0 }],
    emojis: [], stickers: [], members: [], presences: [], voice_states: [], stage_instances: [], guild_scheduled_events: [],
    channels: [channelObject(FAKE_DISCORD_IDS.textChannel, lastMessageId(FAKE_DISCORD_IDS.textChannel))],
    threads: [channelObject(FAKE_DISCORD_IDS.thread, lastMessageId(FAKE_DISCORD_IDS.thread))],
    joined_at: new Date(0).toISOString(), premium_tier: 0, verification_level: 0, default_message_notifications: 0, explicit_content_filter: 0,
    mfa_level: 0, nsfw_level: 0, preferred_locale: 'en-US', system_channel_flags: 0,
  };
}
