import { describe, expect, it } from 'vitest';
import { contextFigures } from '../../src/core/session-figures.js';
import { formatSessionsTable, formatSessionUsage, pageSessions } from '../../src/monitor/index.js';
import { seededSession, seededSessions } from '../helpers/monitor-seed.js';

describe('formatSessionsTable', () => {
  it('prints one aligned line per session under a header', () => {
    const rows = pageSessions(seededSessions().map((d) => d.session), { sort: 'fill' }).items;
    expect(formatSessionsTable(rows).split('\n')).toEqual([
      'session        channel   model        messages   fill   window  tokens in  tokens out     cost  compactions  last activity (UTC)',
      'web:abc        web       gpt-4o-mini        80  79.7%  128,000  1,090,000       7,000  $0.0123            0  2026-01-15 09:00:00',
      'telegram:1001  telegram  gpt-4o-mini       120  17.8%  128,000  1,173,940      10,500  $0.457             2  2026-01-15 10:00:00',
      'discord:2002   discord   gpt-4o-mini        12   3.9%  128,000     12,000       1,050  $0.0123            0  2026-01-15 11:00:00',
    ]);
  });

  it('says so when there are no sessions', () => {
    expect(formatSessionsTable([])).toBe('(no sessions)');
  });
});

describe('formatSessionUsage', () => {
  it('reports the ledger, the fill against both triggers and the compactions', () => {
    const text = formatSessionUsage(seededSession('telegram:1001', { turns: 30, perTurn: 4_000, compactAt: [16, 30], costUsd: 0.4567 }));
    expect(text).toContain('context        22,740 of 128,000 tokens (17.8%; window 128,000); compaction at 50% (64,000), hygiene at 85% (108,800)');
    expect(text).toContain('cost           $0.457 (estimated)');
    expect(text).toContain('compactions    2 (attempts: in-loop compacted=2; hygiene compacted=0), 99,260 tokens removed');
    expect(text).toContain('pinned facts   ORD-48213-XK, #4471');
  });

  it('says "price unknown" for calls of a model without a price, never $0', () => {
    const unpriced = formatSessionUsage(seededSession('web:demo', { turns: 2, perTurn: 1_000, compactAt: [], costUsd: 0, unpricedCalls: 4 }));
    expect(unpriced).toContain('cost           price unknown\n');
    const part = formatSessionUsage(seededSession('web:mixed', { turns: 2, perTurn: 1_000, compactAt: [], costUsd: 0.0123, unpricedCalls: 1 }));
    expect(part).toContain('cost           $0.0123 + price unknown (estimated)');
    const row = seededSession('web:demo', { turns: 2, perTurn: 1_000, compactAt: [], costUsd: 0, unpricedCalls: 4 }).session;
    expect(formatSessionsTable([row])).toContain('price unknown');
  });

  it('measures fill against the usable window and shows the reserve beside the window', () => {
    const detail = seededSession('web:r', { turns: 1, perTurn: 1_000, compactAt: [] });
    detail.context = contextFigures(3_000, { contextWindow: 16_000, reservedOutputTokens: 4_000 }, { threshold: 0.5, hygieneThreshold: 0.85 });
    expect(formatSessionUsage(detail)).toContain('3,000 of 12,000 tokens (25.0%; window 16,000, 4,000 reserved for the answer); compaction at 50% (6,000), hygiene at 85% (10,200)');
  });
});
