import type { ApprovalRecord } from '../core/approval.js';
import { replyJobId } from '../queue/names.js';

/**
 * The outbound id of an approval's question: the worker sends the question with it (workers/turn-park.ts)
 * and the gateway finds the question's message by it to show the decision (src/gateway/show-decision.ts).
 */
export function questionReplyId(record: Pick<ApprovalRecord, 'turnId' | 'id'>): string {
  return replyJobId([record.turnId, `approval-${record.id}`], 'notice');
}
