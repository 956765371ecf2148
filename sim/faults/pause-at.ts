import type { z } from 'zod';
import { nonNegative, part } from '../schema-kit.ts';
import type { PointInjector } from './injector.ts';
import { KILL_POINTS, pointScopeFields, scopeProblems } from './point-scope.ts';

/**
 * A pause at an await point: the worker that reaches the point freezes (delayMs later, or at its next
 * await) and wakes durationMs later as a possible zombie; seed 002's zombie test freezes the busiest
 * worker mid model call this way, each round.
 */
export const pauseAtFault = part(
  'pause-at',
  { ...pointScopeFields, durationMs: nonNegative().default(60_000).meta({ description: 'How long it stays frozen; default 60000.' }) },
  'Freeze the worker that reaches an await point; it wakes durationMs later as a possible zombie.',
).superRefine(scopeProblems);
export type PauseAtFault = z.output<typeof pauseAtFault>;

export const pauseAt: PointInjector<PauseAtFault> = {
  kind: 'pause-at',
  /**
   * A swarm seed freezes a worker at one or two await points (any of them, transaction boundaries
   * included: a pause between two commits of a run) at one of their first dozen arrivals, for a short
   * stall or for longer than a lease, so every window is hit at a known rate.
   */
  swarm: ({ random }, plan) => {
    for (let n = random.int(1, 2); n > 0; n--) {
      plan.points.push({ kind: 'pause-at', point: random.pick(KILL_POINTS), occurrence: random.int(1, 12), durationMs: random.chance(0.5) ? random.int(500, 5_000) : random.int(30_000, 90_000) });
    }
  },
  fire: (fault, point, incarnation, _atNextAwait, { world }) => {
    // A process is frozen between two statements: it finishes this burst and stops at its next await.
    world.loop.after(fault.delayMs ?? 0, () => {
      if (world.isCurrent(incarnation)) world.pause(incarnation.worker, fault.durationMs, fault.label, point);
    });
    return false;
  },
};
