import type { z } from 'zod';
import { part } from '../schema-kit.ts';
import type { PointInjector } from './injector.ts';
import { BOUNDARY_POINTS, pointScopeFields, scopeProblems, TASKLESS_POINTS } from './point-scope.ts';

/**
 * An operator's cancel drawn relative to a run's own milestones (issue 15 item 4): when a worker
 * reaches a transaction boundary of a task (the BEGIN of a heartbeat, a checkpoint, an effect record, its
 * terminal write...), the operator cancels that task (delayMs later: while the call is in flight), so a
 * cancel meets a run between two of its commits, at a known rate per window (Q13). Points that name no
 * task (the model call, a tool call, a claim) are counted and pass.
 */
export const cancelAtFault = part('cancel-at', { ...pointScopeFields }, 'The operator cancels the task a worker is at a transaction boundary of.').superRefine(scopeProblems);
export type CancelAtFault = z.output<typeof cancelAtFault>;

/** Boundaries of a call that names its task. */
const TASK_POINTS = BOUNDARY_POINTS.filter((point) => !TASKLESS_POINTS.has(point));

export const cancelAt: PointInjector<CancelAtFault> = {
  kind: 'cancel-at',
  swarm: ({ random }, plan) => {
    for (let n = random.int(1, 2); n > 0; n--) plan.points.push({ kind: 'cancel-at', point: random.pick(TASK_POINTS), occurrence: random.int(1, 12) });
  },
  fire: (fault, point, _incarnation, _atNextAwait, { world }, taskId) => {
    if (taskId === undefined) return false;
    world.history.note('cancel-at', 'faults', { taskId, at: point });
    const delayMs = fault.delayMs ?? 0;
    if (delayMs === 0) world.cancel(taskId);
    else world.loop.after(delayMs, () => world.cancel(taskId));
    return false;
  },
};
