import { STALE_LEASE, holder, holdsLease, write, type QueueContext, type Holder } from '../queue/context.ts';
import { endAsHolder } from '../queue/holder-writes.ts';
import type { StaleLease } from '../queue/types.ts';
import type { Step, StoreTx } from '../store/store.ts';

export type InterruptResult = { ok: true; next: 'ready' | 'cancelled' } | StaleLease;

/**
 * R8: a draining worker hands back a run it will not finish: fenced, the task goes back to ready with
 * an `interrupted` event, and the next claim resumes it from its last checkpoint. Q13: a run with a
 * pending cancel is not handed back; it ends `cancelled` there, as its next step boundary would have.
 */
export function interrupt(context: QueueContext, taskId: number, workerId: string, generation: number, reason: string): Promise<InterruptResult> {
  const who = holder(taskId, workerId, generation);
  return write(context, 'interrupt', (tx, at) => interruptIn(context, tx, at, who, reason), { holderRow: who.taskId });
}

function* interruptIn(context: QueueContext, tx: StoreTx, at: number, who: Holder, reason: string): Step<InterruptResult> {
  const row = yield* tx.holderRow(who.taskId);
  if (!holdsLease(row, who.workerId, who.generation, at)) return STALE_LEASE;
  if (row.cancel_requested === 1) {
    yield* endAsHolder(context, tx, row, who, at, 'interrupt', 'cancelled', { source: 'interrupt', reason }, { outcome: 'cancelled' });
    return { ok: true, next: 'cancelled' };
  }
  yield* endAsHolder(context, tx, row, who, at, 'interrupt', 'ready', { reason }, { outcome: 'interrupted', errorMessage: reason });
  return { ok: true, next: 'ready' };
}
