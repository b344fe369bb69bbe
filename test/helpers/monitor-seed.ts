import { contextFigures } from '../../src/core/session-figures.js';
import type { CompactionEvent, FillPoint, SessionDetail } from '../../src/monitor/index.js';

const T0 = Date.UTC(2026, 0, 15, 9, 0, 0);
const WINDOW = 128_000;

/** A session whose context grows by `perTurn` tokens a turn and is compacted at the given turns. */
export function seededSession(id: string, options: { turns: number; perTurn: number; compactAt: number[]; lastActivityAt?: number; costUsd?: number; unpricedCalls?: number }): SessionDetail {
  const fillHistory: FillPoint[] = [];
  const compactions: CompactionEvent[] = [];
  let tokens = 2_000;
  for (let turn = 1; turn <= options.turns; turn += 1) {
    tokens += options.perTurn;
    if (options.compactAt.includes(turn)) {
      const after = Math.round(tokens * 0.3);
      compactions.push({ call: turn - 1, turn, at: T0 + turn * 60_000, layer: turn % 2 === 0 ? 'in-loop' : 'hygiene', outcome: 'compacted', tokensBefore: tokens, tokensAfter: after, requestTokensBefore: tokens, requestTokensAfter: after, durationMs: 1200 + turn, model: 'gpt-4o-mini' });
      tokens = after;
    }
    fillHistory.push({ call: turn, turn, at: T0 + turn * 60_000, tokens, fill: tokens / WINDOW });
  }
  const channel = id.split(':')[0] as 'telegram' | 'discord' | 'web';
  const promptTokens = fillHistory.reduce((sum, p) => sum + p.tokens, 0);
  const completionTokens = options.turns * 350;
  return {
    session: {
      id, channel, model: 'gpt-4o-mini', messages: options.turns * 4, contextTokens: tokens, contextWindow: WINDOW, usableWindow: WINDOW, fill: tokens / WINDOW,
      promptTokens, completionTokens, costUsd: options.costUsd ?? 0.0123, unpricedCalls: options.unpricedCalls ?? 0, compactions: compactions.length,
      lastActivityAt: options.lastActivityAt ?? T0 + options.turns * 60_000, paused: false,
    },
    ledger: {
      promptTokens, completionTokens, cachedTokens: 1_024, cacheShare: promptTokens > 0 ? 1_024 / promptTokens : 0, calls: options.turns * 2, costUsd: options.costUsd ?? 0.0123, unpricedCalls: options.unpricedCalls ?? 0,
      compactions: compactions.length,
      compactionsByLayer: { 'in-loop': { compacted: compactions.filter((c) => c.layer === 'in-loop').length }, hygiene: { compacted: compactions.filter((c) => c.layer === 'hygiene').length } },
      tokensRemoved: compactions.reduce((sum, c) => sum + c.tokensBefore - c.tokensAfter, 0),
      lastPromptTokens: tokens, summaryCalls: compactions.length, summaryPromptTokens: 0, summaryCompletionTokens: 0, resets: 0,
    },
    limits: { model: 'gpt-4o-mini', summaryModel: 'gpt-4o-mini', contextWindow: WINDOW, reservedOutputTokens: 0 },
    context: contextFigures(tokens, { contextWindow: WINDOW, reservedOutputTokens: 0 }, { threshold: 0.5, hygieneThreshold: 0.85 }),
    resets: [],
    activity: { createdAt: T0, contextMessages: 12, busy: false, waiting: 0 },
    fillHistory,
    compactions,
    summary: '## Goal\nTrack order ORD-48213-XK to delivery.\n## Pinned facts\n- ORD-48213-XK\n- #4471',
    pinnedFacts: ['ORD-48213-XK', '#4471'],
    notes: [{ key: 'name', text: 'The user is called Ada.' }],
  };
}

/** Three sessions: a busy Telegram one with two compactions, a quiet Discord one, a full web one. */
export function seededSessions(): SessionDetail[] {
  return [
    seededSession('telegram:1001', { turns: 30, perTurn: 4_000, compactAt: [16, 30], lastActivityAt: T0 + 3_600_000, costUsd: 0.4567 }),
    seededSession('discord:2002', { turns: 3, perTurn: 1_000, compactAt: [], lastActivityAt: T0 + 7_200_000 }),
    seededSession('web:abc', { turns: 20, perTurn: 5_000, compactAt: [], lastActivityAt: T0 }),
  ];
}
