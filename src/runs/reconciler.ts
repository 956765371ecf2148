import { write, type QueueContext } from '../queue/context.ts';
import { InvariantError } from '../queue/errors.ts';
import { closeHold } from '../queue/run-end.ts';
import { transition } from '../queue/transition.ts';
import type { Step, StoreTx } from '../store/store.ts';

/**
 * R5: one pass of the reconciler, on the injected clock. Under 'auto', an uncertain task whose lease
 * passed more than graceMs ago is re-queued when its run can resume without repeating an unledgered
 * effect: its last checkpoint is B, or A whose pending tool calls are read-only or ledgered. Under
 * 'hold' nothing leaves uncertain here: only confirmStopped frees it (Q11). Fencing still refuses every
 * write of the old generation either way. Also releases holds left without a live run (R4).
 */
export function reconcile(context: QueueContext): Promise<{ requeued: number; releasedHolds: number }> {
  return write(context, 'reconcile', (tx, at) => reconcileIn(context, tx, at));
}

function* reconcileIn(context: QueueContext, tx: StoreTx, at: number): Step<{ requeued: number; releasedHolds: number }> {
  let requeued = 0;
  const { config } = context;
  if (config.reconciliation === 'auto') {
    for (const row of yield* tx.taskListInState('uncertain')) {
      if (row.lease_until === null || row.lease_until + config.graceMs > at) continue;
      const checkpoint = yield* tx.checkpointLastFlags(row.id);
      if (checkpoint === undefined || (checkpoint.kind === 'A' && checkpoint.requeue_safe !== 1)) continue;
      const exhausted = row.attempts >= config.maxAttempts || row.deliveries >= config.maxDeliveries;
      if (row.cancel_requested === 1) {
        yield* transition(context, tx, at, { by: 'other', event: 'reconcile', row, to: 'cancelled', outcome: 'cancelled' }, { decision: 'cancel', reason: 'cancel_requested' });
      } else if (exhausted) {
        yield* transition(context, tx, at, { by: 'other', event: 'reconcile', row, to: 'failed' }, { decision: 'fail', reason: 'attempts_exhausted' });
      } else {
        yield* transition(context, tx, at, { by: 'other', event: 'reconcile', row, to: 'ready' }, { decision: 'requeue', checkpointKind: checkpoint.kind, generation: row.generation });
      }
      requeued++;
    }
  }
  return { requeued, releasedHolds: yield* releaseStaleHolds(context, tx, at) };
}

/**
 * R4: a hold whose run has sat uncertain with no live worker for holdTtlMs is released, so the credits
 * do not stay reserved forever. (Every end closes its hold in its own transaction, so no other task
 * can hold one with no live run.)
 */
function* releaseStaleHolds(context: QueueContext, tx: StoreTx, at: number): Step<number> {
  const stale = yield* tx.holdListStale(at - context.config.holdTtlMs);
  let released = 0;
  for (const hold of stale) {
    const result = yield* closeHold(context, tx, hold.task_id, at, hold.state === 'uncertain' ? 'hold_ttl' : 'orphaned');
    if (result === 'already_closed') throw new InvariantError(`hold of task ${hold.task_id} listed as open but already closed`);
    released++;
  }
  return released;
}
