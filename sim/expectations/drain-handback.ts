import { z } from 'zod';
import { HOLDER_WRITES } from '../checkers/i2-stale-leases.ts';
import { analyse, wallTimeAt } from '../checkers/timeline.ts';
import type { ExpectationKind } from './types.ts';

interface DrainHandback {
  kind: 'drain-handback';
  /** At least this many runs were handed back `interrupted` in the run; default 1. */
  minInterrupted?: number;
  /** At least this many of them had a checkpoint and were resumed from it; default 0. */
  minResumed?: number;
}

/**
 * R8 as a scenario with drain faults (faults/drain.ts) must show it, judged from the event log and the
 * history:
 * - every run handed back `interrupted` (by incarnation X, generation g) is claimed next as generation
 *   g + 1 by another incarnation, and resumes from the task's last checkpoint before the hand-back: the
 *   first task_resumed or checkpoint event after the interrupt is a task_resumed naming that checkpoint
 *   (a run with no checkpoint yet starts afresh: no task_resumed before its own first checkpoint);
 * - X writes nothing more under generation g once it handed the run back (no holder write of X for the
 *   task and generation commits after the interrupt);
 * - no lease of an incarnation that drained and exited lapsed: each run it held ended by its own write
 *   or was handed back, none was left to run past its lease. Two lapses are R8's own: a lease that ran
 *   out before the drain began (the process was frozen past it when the SIGTERM came; it drains on
 *   resume) and a run whose hand-back the store refused for an outage (the interrupt failed retryably:
 *   Worker.drain leaves that lease to lapse, and the takeover comes the usual way).
 */
export const drainHandback: ExpectationKind<DrainHandback> = {
  kind: 'drain-handback',
  class: 'safety',
  description: 'R8: every interrupted run is claimed next (generation + 1) by another incarnation and resumes from its last checkpoint; the drained incarnation writes nothing more for it, and no lease of an incarnation that drained lapsed',
  schema: z.strictObject({
    kind: z.literal('drain-handback'),
    minInterrupted: z.number().int().min(0).optional(),
    minResumed: z.number().int().min(0).optional(),
  }),
  check(spec, run) {
    const analysis = analyse(run);
    const problems: string[] = [];
    const exited = new Set<string>();
    const drainAt = new Map<string, number>();
    for (const entry of run.history.entries()) if (entry.type === 'note' && entry.kind === 'exit') exited.add(entry.actor);
    // Interrupts by (task, generation): the interrupted event's id and who handed it back.
    const handedBack = new Map<string, { id: number; workerId: string }>();
    let interrupted = 0;
    let resumed = 0;
    for (const [taskId, events] of analysis.eventsByTask) {
      let lastCheckpoint: { seq: unknown; generation: unknown } | undefined;
      let pending: { workerId: string; generation: number; checkpointSeq: unknown; id: number; claimed: boolean } | undefined;
      for (const event of events) {
        if (event.type === 'interrupted') {
          interrupted++;
          const workerId = event.workerId ?? '?';
          const generation = event.generation ?? Number(event.data.generation);
          handedBack.set(`${taskId}:${generation}`, { id: event.id, workerId });
          pending = { workerId, generation, checkpointSeq: lastCheckpoint?.seq, id: event.id, claimed: false };
          continue;
        }
        if (pending !== undefined && event.type === 'claimed') {
          const generation = event.generation ?? Number(event.data.generation);
          const workerId = event.workerId ?? String(event.data.workerId);
          if (!pending.claimed) {
            if (generation !== pending.generation + 1) problems.push(`task ${taskId}: handed back interrupted in generation ${pending.generation} (event ${pending.id}), next claimed as generation ${generation}`);
            if (workerId === pending.workerId) problems.push(`task ${taskId}: handed back interrupted by ${pending.workerId} (event ${pending.id}), claimed again by the same incarnation`);
            pending.claimed = true;
          }
        }
        if (pending !== undefined && (event.type === 'task_resumed' || event.type === 'checkpoint')) {
          if (!pending.claimed) problems.push(`task ${taskId}: ${event.type} event ${event.id} after the interrupt (event ${pending.id}) before any new claim`);
          else if (pending.checkpointSeq === undefined && event.type === 'task_resumed') problems.push(`task ${taskId}: interrupted before any checkpoint (event ${pending.id}), yet resumed from checkpoint ${String(event.data.checkpointSeq)} (event ${event.id})`);
          else if (pending.checkpointSeq !== undefined && event.type === 'checkpoint') problems.push(`task ${taskId}: interrupted after checkpoint ${String(pending.checkpointSeq)} (event ${pending.id}), but the next run checkpointed (event ${event.id}) without resuming from it`);
          else if (pending.checkpointSeq !== undefined && event.data.checkpointSeq !== pending.checkpointSeq) problems.push(`task ${taskId}: interrupted after checkpoint ${String(pending.checkpointSeq)} (event ${pending.id}), resumed from checkpoint ${String(event.data.checkpointSeq)} (event ${event.id})`);
          else if (event.type === 'task_resumed') resumed++;
          pending = undefined;
        }
        if (event.type === 'checkpoint') lastCheckpoint = { seq: event.data.checkpointSeq, generation: event.generation };
      }
    }
    // The drained incarnation writes nothing under a generation it handed back.
    for (const entry of run.history.entries()) {
      if (entry.type !== 'ok' || !HOLDER_WRITES.has(entry.op) || entry.taskId === undefined || entry.generation === undefined) continue;
      const back = handedBack.get(`${entry.taskId}:${entry.generation}`);
      const ev = (entry.data as { ev?: unknown } | undefined)?.ev;
      if (back === undefined || back.workerId !== entry.actor || typeof ev !== 'number' || ev <= back.id) continue;
      problems.push(`task ${entry.taskId}: ${entry.actor} handed generation ${entry.generation} back (event ${back.id}), then its ${entry.op} committed (cursor ${ev})`);
    }
    // No lease of an incarnation that drained and exited lapsed, but one that lapsed before the drain
    // began (the incarnation was frozen past its lease when the SIGTERM came) or whose hand-back the
    // store refused for an outage (the interrupt failed retryably: Worker.drain leaves it to lapse).
    const refusedHandBack = new Set<string>();
    for (const entry of run.history.entries()) {
      if (entry.type === 'fail' && entry.op === 'interrupt' && entry.reason !== 'stale_lease') refusedHandBack.add(`${entry.actor}|${String(entry.taskId)}|${String(entry.generation)}`);
      if (entry.type === 'note' && entry.kind === 'drain' && !drainAt.has(entry.actor)) drainAt.set(entry.actor, wallTimeAt(analysis, entry));
    }
    run.events.forEach((event, position) => {
      if (event.type !== 'lease_expired') return;
      const holder = analysis.holderBefore[position];
      if (holder === undefined || !exited.has(holder.workerId)) return;
      if (event.at < (drainAt.get(holder.workerId) ?? Number.POSITIVE_INFINITY) || refusedHandBack.has(`${holder.workerId}|${event.taskId}|${holder.generation}`)) return;
      problems.push(`task ${event.taskId}: the lease of ${holder.workerId} (generation ${holder.generation}), an incarnation that drained and exited, lapsed (event ${event.id}): the drain neither let the run finish nor handed it back`);
    });
    const minInterrupted = spec.minInterrupted ?? 1;
    if (interrupted < minInterrupted) problems.push(`${interrupted} run(s) handed back interrupted, expected at least ${minInterrupted}`);
    const minResumed = spec.minResumed ?? 0;
    if (resumed < minResumed) problems.push(`${resumed} interrupted run(s) resumed from their checkpoint, expected at least ${minResumed}`);
    return problems.slice(0, 8);
  },
};
