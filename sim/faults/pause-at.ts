import type { z } from 'zod';
import { nonNegative, part } from '../schema-kit.ts';
import type { PointInjector } from './injector.ts';
import { pointScopeFields, scopeProblems } from './point-scope.ts';

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
  fire: (fault, _point, incarnation, _atNextAwait, { world }) => {
    // A process is frozen between two statements: it finishes this burst and stops at its next await.
    world.loop.after(fault.delayMs ?? 0, () => {
      if (world.isCurrent(incarnation)) world.pause(incarnation.worker, fault.durationMs, fault.label);
    });
    return false;
  },
};
