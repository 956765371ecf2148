import { tasksInState, type CompletingRow } from '../store/statements.ts';
import { STALE_LEASE, emit, holdsLease, moveTask, requireGeneration, requireTaskId, requireWorkerId, type QueueContext } from '../queue/context.ts';
import { InvariantError } from '../queue/errors.ts';
import { endCancelled } from '../queue/holder-writes.ts';
import type { StaleLease } from '../queue/types.ts';
import { assertTransition } from '../queue/states.ts';
import { releaseStaleHolds } from './settlement.ts';

interface CheckpointFlags {
  kind: 'A' | 'B';
  requeue_safe: number;
}

/**
 * R5: one pass of the reconciler, on the injected clock. Under 'auto', an uncertain task whose lease
 * passed more than graceMs ago is re-queued when its run can resume without repeating an unledgered
 * effect: its last checkpoint is B, or A whose pending tool calls are read-only or ledgered. Under
 * 'hold' nothing leaves uncertain here: only confirmStopped frees it (Q11). Fencing still refuses every
 * write of the old generation either way. Also releases holds left without a live run (R4).
 */
export function reconcile(context: QueueContext): { requeued: number; releasedHolds: number } {
  return context.write('reconcile', (at) => {
    let requeued = 0;
    const { statements, config } = context;
    if (config.reconciliation === 'auto') {
      for (const row of tasksInState(statements, 'uncertain')) {
        if (row.lease_until === null || row.lease_until + config.graceMs > at) continue;
        const checkpoint = statements.lastCheckpointFlags.get(row.id) as CheckpointFlags | undefined;
        if (checkpoint === undefined || (checkpoint.kind === 'A' && checkpoint.requeue_safe !== 1)) continue;
        const exhausted = row.attempts >= config.maxAttempts || row.deliveries >= config.maxDeliveries;
        if (row.cancel_requested === 1) moveTask(context, row, 'cancelled', at, 'reconciled', { decision: 'cancel', reason: 'cancel_requested' }, 'cancelled');
        else if (exhausted) moveTask(context, row, 'failed', at, 'reconciled', { decision: 'fail', reason: 'attempts_exhausted' });
        else moveTask(context, row, 'ready', at, 'reconciled', { decision: 'requeue', checkpointKind: checkpoint.kind, generation: row.generation });
        requeued++;
      }
    }
    return { requeued, releasedHolds: releaseStaleHolds(context, at) };
  });
}

/**
 * R8: a draining worker hands back a run it will not finish: fenced, the task goes back to ready with
 * an `interrupted` event, and the next claim resumes it from its last checkpoint. Q13: a run with a
 * pending cancel is not handed back; it ends `cancelled` there, as its next step boundary would have.
 */
export function interrupt(
  context: QueueContext,
  taskIdArgument: number,
  workerIdArgument: string,
  generationArgument: number,
  reason: string,
): { ok: true; next: 'ready' | 'cancelled' } | StaleLease {
  const taskId = requireTaskId(taskIdArgument);
  const workerId = requireWorkerId(workerIdArgument);
  const generation = requireGeneration(generationArgument);
  // running -> ready is an edge of the state machine; the fenced UPDATE below only moves a running task.
  assertTransition(taskId, 'running', 'ready');
  return context.write('interrupt', (at) => {
    const row = context.statements.completingRow.get(taskId) as CompletingRow | undefined;
    if (!holdsLease(row, workerId, generation, at)) return STALE_LEASE;
    if (row.cancel_requested === 1) {
      endCancelled(context, row, { taskId, workerId, generation }, at, { source: 'interrupt', reason });
      return { ok: true as const, next: 'cancelled' as const };
    }
    const left = context.statements.leaveRunning.get({
      id: taskId,
      workerId,
      generation,
      now: at,
      state: 'ready',
      outcome: 'interrupted',
      errorClass: null,
      errorMessage: reason,
      notBefore: at,
      finishedAt: null,
    }) as { event_seq: number } | undefined;
    if (left === undefined) throw new InvariantError(`task ${taskId}: fenced write lost its lease inside its own transaction`);
    emit(context, taskId, left.event_seq, 'interrupted', at, { from: 'running', to: 'ready', reason, workerId, generation }, { workerId, generation });
    return { ok: true as const, next: 'ready' as const };
  });
}
