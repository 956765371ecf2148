import type { z } from 'zod';
import { nonNegative, part } from '../schema-kit.ts';
import type { PointInjector } from './injector.ts';
import { KILL_POINTS, pointScopeFields, scopeProblems } from './point-scope.ts';

/**
 * S4 kill at an await point: the worker dies when it reaches a point (before a model or tool call,
 * after an external effect but before its response is recorded, between the two checkpoints of a
 * step, after the terminal write), at the occurrence-th arrival its scope counts (point-scope.ts).
 */
export const killAtFault = part(
  'kill-at',
  { ...pointScopeFields, reviveAfterMs: nonNegative().default(5_000).meta({ description: 'A new incarnation starts this long after; default 5000.' }) },
  'Kill the worker that reaches an await point; a new incarnation starts reviveAfterMs later.',
).superRefine(scopeProblems);
export type KillAtFault = z.output<typeof killAtFault>;

export const killAt: PointInjector<KillAtFault> = {
  kind: 'kill-at',
  swarm: ({ random }, plan) => {
    for (let n = random.int(1, 3); n > 0; n--) {
      plan.points.push({ kind: 'kill-at', point: random.pick(KILL_POINTS), occurrence: random.int(1, 12), reviveAfterMs: random.int(500, 20_000) });
    }
  },
  fire: (fault, point, incarnation, atNextAwait, { world }) => {
    const delayMs = fault.delayMs ?? 0;
    if (delayMs > 0) {
      // The call that follows the point starts; the process dies while it is in flight.
      world.loop.after(delayMs, () => {
        if (world.isCurrent(incarnation)) world.kill(incarnation.worker, `${point}+${delayMs}ms`, fault.reviveAfterMs, false, fault.label);
      });
      return false;
    }
    // The call at the point never starts (the hook answers true and the call never resolves); the
    // process itself dies before the loop's next event, so no other run of this incarnation that is
    // already past its await can reach the queue as a dead process.
    world.kill(incarnation.worker, point, fault.reviveAfterMs, atNextAwait, fault.label);
    return true;
  },
};
