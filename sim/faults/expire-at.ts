import type { z } from 'zod';
import { nonNegative, part } from '../schema-kit.ts';
import { jumpClock } from './clock-jump.ts';
import type { PointInjector } from './injector.ts';
import { pointScopeFields, scopeProblems } from './point-scope.ts';

/**
 * A deadline drawn inside an await of a run (issue 35 item 2), by the window targeting of the other
 * point faults: when a worker reaches an await point of a task whose deadline is still ahead (the
 * tool_result it appends between two writes of a step or inside a graph layer, the checkpoint before
 * a write's ledger lookup, the heartbeat before a write, a write's ledger record), the wall clock the
 * worker and the queue read moves to just past that deadline (delayMs later: inside the call that
 * follows), so the deadline falls inside that await, whatever the seed's latencies. It is a clock jump
 * of exactly the time left plus pastMs (noted as one, faults/clock-jump.ts): the monotonic timeline and
 * its timers do not move, so a lease renewed on schedule (10 s of 30 s by default) outlives a jump of a
 * short deadline. Q14 and A8 then promise that no further tool call starts and the task ends expired.
 * Points that name no task (the model call, a tool call, a claim, a ledger lookup), a task without a
 * deadline, or one already past it are counted and pass.
 */
export const expireAtFault = part(
  'expire-at',
  {
    ...pointScopeFields,
    pastMs: nonNegative()
      .default(1)
      .meta({ description: "How far past the task's deadline the clock lands, in ms; default 1." }),
  },
  "Move the clock to just past the deadline of the task a worker is at an await point of, so the deadline falls inside that await.",
).superRefine(scopeProblems);
export type ExpireAtFault = z.output<typeof expireAtFault>;

export const expireAt: PointInjector<ExpireAtFault> = {
  kind: 'expire-at',
  fire: (fault, point, _incarnation, _atNextAwait, run, taskId) => {
    const { world } = run;
    const deadline = taskId === undefined ? undefined : world.deadlineOf(taskId);
    if (deadline === undefined) return false;
    const expire = () => {
      // The deadline is read on the wall clock the worker checks (Q14), which another jump may have moved.
      const leftMs = deadline - world.loop.clock.now();
      if (leftMs < 0) return;
      world.history.note('expire-at', 'faults', { taskId: taskId!, at: point, deadline });
      jumpClock(run, leftMs + fault.pastMs, point);
    };
    const delayMs = fault.delayMs ?? 0;
    if (delayMs === 0) expire();
    else world.loop.after(delayMs, expire);
    return false;
  },
};
