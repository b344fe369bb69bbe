/**
 * Realistic session traffic for bench/sessions: prose with the identifier noise real chats carry
 * (pasted logs and code, JSON tool results with ids and timestamps, ticket numbers and versions in
 * passing, a clock tool), and planted identifiers that matter — in the user's words, in pastes (the
 * assistant's diagnosis names them, as it would), in tool-call arguments and as labelled values in
 * tool results — some of them referred to again later.
 */
import type { ChatMessage, ToolCall } from '../src/index.js';

/** Where a planted identifier first appears. */
export type PlantMode = 'user' | 'paste' | 'call' | 'labelled';

/** One planted identifier: what it is, where it is planted, the turn, and the turn it is asked about again (if any). */
export interface Plant {
  id: string;
  mode: PlantMode;
  turn: number;
  recallTurn: number | null;
}

/** A scenario: its window, its length, the language of its prose and how tool-heavy it is. */
export interface Scenario {
  name: string;
  window: number;
  turns: number;
  language: 'en' | 'mixed';
  /** Probability that a turn uses tools, and the most calls of a round. */
  toolShare: number;
  maxCalls: number;
  /** Largest tool result, in words of prose (≈ 1.3 tokens each). */
  maxResultWords: number;
  /** Probability of a pasted log or code block in a user message. */
  pasteShare: number;
}

const EN = ('the customer asked whether the parcel could be delivered before friday because the office closes early ' +
  'and nobody will sign for it otherwise we checked the warehouse stock levels then the carrier said the van broke down ' +
  'near the depot so the driver will retry tomorrow morning please confirm the address again and tell me if the refund ' +
  'went through since the card was charged twice last week').split(' ');
const OTHER = [
  'Клиент спрашивает, можно ли доставить посылку до пятницы, потому что офис закрывается рано и никто не распишется.',
  '客户询问包裹能否在周五之前送到，因为办公室提前关门，否则没有人签收。我们检查了仓库库存。',
  'お客様は、事務所が早く閉まるので金曜日までに荷物が届くかどうかを尋ねています。倉庫の在庫も確認しました。',
  'El cliente pregunta si el paquete puede llegar antes del viernes porque la oficina cierra temprano y nadie firmará.',
];
const LEVELS = ['INFO', 'INFO', 'INFO', 'DEBUG', 'WARN', 'ERROR'];
const CODE_NAMES = ['parse_42', 'retryCount3', 'handler_v2', 'buf_1024', 'tmp_7', 'row_idx2', 'item_99', 'cacheKey64'];

/** A seeded source of realistic text for one session. */
export class Traffic {
  private clockMs = Date.UTC(2026, 10, 20, 8, 0, 0);

  constructor(private readonly random: () => number, private readonly scenario: Scenario) {}

  /** `words` words of prose in the scenario's language. */
  prose(words: number): string {
    if (this.scenario.language === 'mixed' && this.random() < 0.7) {
      const out: string[] = [];
      for (let n = 0; n < words; n += 18) out.push(this.pick(OTHER));
      return out.join(' ');
    }
    return Array.from({ length: words }, () => this.pick(EN)).join(' ');
  }

  /** A user's sentence that mentions a ticket or a version in passing (noise the user typed). */
  passing(): string {
    const kind = this.int(4);
    if (kind === 0) return ` (this looks like #${1000 + this.int(8999)} again)`;
    if (kind === 1) return ` after we upgraded to v${this.int(5)}.${this.int(20)}.${this.int(10)}`;
    if (kind === 2) return ` since build ${this.int(900) + 100}.${this.int(99)} went out`;
    return ` — same as JIRA-${1000 + this.int(8999)}`;
  }

  /** A pasted log of `lines` lines; `planted` (if any) sits in one ERROR line. */
  logPaste(lines: number, planted?: string): string {
    const out: string[] = [];
    const at = planted ? this.int(lines) : -1;
    for (let i = 0; i < lines; i++) {
      const stamp = this.stamp();
      const req = this.hex(10);
      if (i === at) out.push(`${stamp} ERROR [worker-${this.int(8)}] req=${req} failed on ${planted}: upstream timeout after ${this.int(3000)}ms`);
      else if (this.random() < 0.15) out.push(`${stamp} WARN  retry ${this.int(5)}/5 for req=${req} (incident INC-${10000 + this.int(89999)})`);
      else if (this.random() < 0.1) out.push(`    at OrderService.fetch (src/services/order.ts:${this.int(400)}:${this.int(40)})`);
      else out.push(`${stamp} ${this.pick(LEVELS).padEnd(5)} [worker-${this.int(8)}] req=${req} path=/api/v2/items/${10000 + this.int(89999)} status=200 dur=${this.int(900)}ms`);
    }
    return `\n\`\`\`\n${out.join('\n')}\n\`\`\``;
  }

  /** A pasted code block with numbered lines, code identifiers with digits and a hash. */
  codePaste(lines: number): string {
    const out: string[] = [];
    for (let i = 0; i < lines; i++) {
      const name = this.pick(CODE_NAMES);
      out.push(`${String(100 + i).padStart(4)} | const ${name} = await load(${name.length}, '${this.hex(12)}'); // v${this.int(3)}.${this.int(9)}.${this.int(9)}`);
    }
    return `\n\`\`\`ts\n${out.join('\n')}\n\`\`\``;
  }

  /** A JSON tool result: numeric ids, ISO timestamps, a request id, prose, and the labelled value (if any). */
  jsonResult(words: number, labelled?: string, field = 'reference'): string {
    const items = Array.from({ length: 1 + this.int(3) }, () => ({
      id: 10000 + this.int(89999), sku: `sku_${this.int(999)}`, updated_at: this.stamp(), qty: this.int(40),
    }));
    const body: Record<string, unknown> = labelled ? { [field]: labelled } : {};
    Object.assign(body, { request_id: this.hex(16), fetched_at: this.stamp(), items, notes: this.prose(words) });
    return JSON.stringify(body);
  }

  /** The clock tool's call and result. */
  clockCall(id: string): { call: ToolCall; result: string } {
    return { call: { id, type: 'function', function: { name: 'current_time', arguments: '{}' } }, result: JSON.stringify({ utc: this.stamp() }) };
  }

  /** A lookup call with realistic arguments; `planted` goes in as the id the agent acts on. */
  lookupCall(id: string, planted?: string): ToolCall {
    const kind = this.int(3);
    const args = planted ? { order_id: planted } : kind === 0 ? { query: this.prose(3), since: '2026-11-01' } : kind === 1 ? { page: 1 + this.int(5), limit: 20 } : { sku: `sku_${this.int(999)}` };
    return { id, type: 'function', function: { name: planted || kind === 2 ? 'get_record' : 'search_records', arguments: JSON.stringify(args) } };
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.random() * n);
  }

  private pick<T>(list: readonly T[]): T {
    return list[this.int(list.length)];
  }

  private stamp(): string {
    this.clockMs += 1000 + this.int(90_000);
    return new Date(this.clockMs).toISOString();
  }

  private hex(chars: number): string {
    let out = '';
    while (out.length < chars) out += this.int(16).toString(16);
    return out.replace(/^[a-f]/, '7').replace(/^(\d+)$/, 'a$1').slice(0, chars);
  }
}

/** ≥ 40 planted identifiers over a session, in every mode, a third of them recalled later. */
export function plantIds(turns: number, count: number, random: () => number): Plant[] {
  const shapes = [
    (n: number) => `ORD-${n}-XK`, (n: number) => `#${n % 9000 + 1000}`, (n: number) => `INV-2024-${String(n % 1000).padStart(3, '0')}`,
    (n: number) => `${n}${n}`, (n: number) => `/srv/data/${n}.json`, (n: number) => `https://status.example.com/t/${n}`,
    (n: number) => `user${n}@example.com`, (n: number) => `$${n % 5000},${String(n % 1000).padStart(3, '0')}.00`,
  ];
  const modes: PlantMode[] = ['user', 'paste', 'call', 'labelled'];
  const every = Math.max(1, Math.floor((turns - 4) / count));
  return Array.from({ length: count }, (_, k) => {
    const turn = 2 + k * every;
    const recall = k % 3 === 2 ? Math.min(turns - 1, turn + 10 + Math.floor(random() * 60)) : null;
    return { id: shapes[k % shapes.length](10000 + Math.floor(random() * 89999)), mode: modes[(k + Math.floor(k / 4)) % 4], turn, recallTurn: recall };
  });
}

/** The user message, or the assistant message with tool calls, of a chat-completions history. */
export type Message = ChatMessage;
