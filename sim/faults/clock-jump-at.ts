import type { z } from 'zod';
import { int, part } from '../schema-kit.ts';
import { jumpClock } from './clock-jump.ts';
import type { PointInjector } from './injector.ts';
import { KILL_POINTS, pointScopeFields, scopeProblems } from './point-scope.ts';

/**
 * A clock jump drawn relative to a run's own milestones (issue 15 item 4): the host's wall clock jumps
 * by deltaMs when a worker reaches an await point (delayMs later: inside the call that follows), so a
 * jump lands between a claim and its first heartbeat, inside a model call, between an effect and its
 * record, at a known rate per window, instead of at a time drawn blind over the whole run.
 */
export const clockJumpAtFault = part(
  'clock-jump-at',
  { ...pointScopeFields, deltaMs: int(Number.MIN_SAFE_INTEGER).meta({ description: 'How far the clock jumps, in ms; negative jumps back.' }) },
  'Jump the clock by deltaMs when a worker reaches an await point.',
).superRefine(scopeProblems);
export type ClockJumpAtFault = z.output<typeof clockJumpAtFault>;

export const clockJumpAt: PointInjector<ClockJumpAtFault> = {
  kind: 'clock-jump-at',
  swarm: ({ random }, plan) => {
    plan.points.push({ kind: 'clock-jump-at', point: random.pick(KILL_POINTS), occurrence: random.int(1, 12), deltaMs: random.int(-5_000, 45_000) });
  },
  fire: (fault, point, _incarnation, _atNextAwait, run) => {
    const delayMs = fault.delayMs ?? 0;
    if (delayMs === 0) jumpClock(run, fault.deltaMs, point);
    else run.world.loop.after(delayMs, () => jumpClock(run, fault.deltaMs, point));
    return false;
  },
};
