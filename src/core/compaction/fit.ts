import { sanitizeToolPairs, placeSummary } from './assemble.js';
import { groupEnd, type ChatMessage } from '../messages.js';
import { trimToolResult } from './prune.js';
import { renderPinned, renderSummaryBlock, cutToTokens } from './summary-block.js';
import type { TokenCounter } from '../tokens.js';

/** Characters every older tool result is trimmed to when a request must be made to fit. */
export const ESCALATION_TRIM_CHARS = 400;

/** A compaction result before it is rendered into messages. */
export interface Draft {
  /** System prompt (and, before the first compaction, the protected head). */
  head: ChatMessage[];
  /** Number of leading system messages in `head` (never dropped). */
  systemCount: number;
  /** Summary body, or null for no summary block. */
  body: string | null;
  /** Facts in the pinned section, most salient first. */
  pinned: string[];
  /** The latest user request of the summarised part, quoted verbatim in the block, or null. */
  latestRequest: string | null;
  /** Ledger facts missing from the request that the pinned section leaves out. */
  omitted: number;
  /** The protected tail. */
  tail: ChatMessage[];
  /** Index in `tail` where the latest exchange starts: it and what follows are never touched. */
  exchangeOffset: number;
}

/** The summary block text of a draft. */
export function summaryText(draft: Draft): string {
  return renderSummaryBlock(draft.body ?? '', renderPinned(draft.pinned, draft.omitted), draft.latestRequest);
}

/** Whether a draft renders a summary block at all. */
export function hasBlock(draft: Draft): boolean {
  return draft.body !== null || draft.pinned.length > 0 || draft.latestRequest !== null;
}

/**
 * Renders drafts and makes them fit, counting with one token counter for one model. Each rendering
 * is remembered per draft object, so counting a draft again reuses its summary message's count:
 * the owner (a compressor) keeps one fitter, whose memory goes with the drafts.
 */
export class DraftFitter {
  private readonly rendered = new WeakMap<Draft, ChatMessage[]>();

  constructor(
    private readonly tokens: TokenCounter,
    private readonly model?: string,
  ) {}

  /** Renders a draft into a projection: head, one summary block, tail; tool pairs sanitized. */
  render(draft: Draft): ChatMessage[] {
    const cached = this.rendered.get(draft);
    if (cached) return cached;
    const messages = !hasBlock(draft)
      ? sanitizeToolPairs([...draft.head, ...draft.tail])
      : sanitizeToolPairs(placeSummary(draft.head, summaryText(draft), draft.tail));
    this.rendered.set(draft, messages);
    return messages;
  }

  /** Tokens of the rendered draft. */
  draftTokens(draft: Draft): number {
    return this.tokens.countMessages(this.render(draft), this.model);
  }

  /** Tokens of one text in this fitter's model. */
  textTokens(text: string): number {
    return this.tokens.countText(text, this.model);
  }

  /**
   * Escalates until the rendered draft costs at most `targetTokens`: trim every tool result but the
   * current round's, shrink the pinned section, drop the oldest tail exchanges whole (never the latest
   * user message and what follows it), and as a last resort cut the summary. With `keepPinned` (a soft
   * goal, not the window) the pinned section is left whole and only the summary's body is cut.
   * Returns the last draft.
   */
  fit(start: Draft, targetTokens: number, keepPinned = false): Draft {
    let draft = start;
    const over = (d: Draft) => this.draftTokens(d) - targetTokens;
    if (over(draft) <= 0) return draft;
    draft = trimOlderToolResults(draft);
    if (over(draft) <= 0) return draft;
    if (!keepPinned) draft = shrinkPinned(draft, over(draft), this);
    if (over(draft) <= 0) return draft;
    while (over(draft) > 0) {
      const next = dropOldestGroup(draft);
      if (!next) break;
      draft = next;
    }
    if (over(draft) <= 0 || (keepPinned && draft.body === null)) return draft;
    const cut = this.cutSummary(draft, over(draft));
    return keepPinned && cut.body === null ? { ...cut, body: '', pinned: draft.pinned, latestRequest: draft.latestRequest, omitted: draft.omitted } : cut;
  }

  private cutSummary(draft: Draft, excess: number): Draft {
    if (draft.body === null) return { ...draft, pinned: [], latestRequest: null, omitted: draft.omitted + draft.pinned.length };
    const bodyTokens = this.textTokens(draft.body);
    const body = cutToTokens(draft.body, bodyTokens - excess - 8, this.tokens, this.model);
    const cut: Draft = { ...draft, body };
    if (this.draftTokens(cut) <= this.draftTokens(draft) - excess) return cut;
    return { ...draft, body: null, pinned: [], latestRequest: null, omitted: draft.omitted + draft.pinned.length };
  }
}

function trimOlderToolResults(draft: Draft): Draft {
  const tail = draft.tail.map((m, i) =>
    i < draft.exchangeOffset && m.role === 'tool' && m.content.length > ESCALATION_TRIM_CHARS
      ? { ...m, content: trimToolResult(m.content, ESCALATION_TRIM_CHARS) }
      : m,
  );
  return { ...draft, tail };
}

function shrinkPinned(draft: Draft, excess: number, fitter: DraftFitter): Draft {
  const pinned = draft.pinned.slice();
  let removed = 0;
  let freed = 0;
  while (pinned.length > 0 && freed < excess) {
    const fact = pinned.pop() as string;
    freed += fitter.textTokens(`- ${fact}\n`);
    removed++;
  }
  return { ...draft, pinned, omitted: draft.omitted + removed };
}

function dropOldestGroup(draft: Draft): Draft | null {
  if (draft.head.length > draft.systemCount) {
    const end = groupEnd(draft.head, draft.systemCount);
    return { ...draft, head: [...draft.head.slice(0, draft.systemCount), ...draft.head.slice(end)] };
  }
  if (draft.exchangeOffset <= 0) return null;
  let end = groupEnd(draft.tail, 0);
  end = Math.min(end, draft.exchangeOffset);
  // Keep whole exchanges: a user message goes with the assistant turn that answers it.
  while (end < draft.exchangeOffset && draft.tail[end]!.role !== 'user') end = groupEnd(draft.tail, end);
  return { ...draft, tail: draft.tail.slice(end), exchangeOffset: draft.exchangeOffset - end };
}
