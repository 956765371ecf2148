import { z } from 'zod';
import type { TaskState } from '../../src/queue/types.ts';
import { SPEC_LIVE_STATES, SPEC_OCCUPYING_STATES } from '../checkers/spec-rules.ts';
import { analyse } from '../checkers/timeline.ts';
import type { ExpectationKind } from './types.ts';

const MEASURES = {
  /** Tasks holding a lease right now. */
  running: new Set<TaskState>(['running']),
  /** Slots held (Q6): running + uncertain. */
  occupied: new Set<TaskState>(SPEC_OCCUPYING_STATES),
  /** Counted against capacity (Q3): ready + running + uncertain. */
  live: new Set<TaskState>(SPEC_LIVE_STATES),
};

interface PeakOccupancy {
  kind: 'peak-occupancy';
  measure: keyof typeof MEASURES;
  /** Count one tenant's tasks only; default: all tenants. */
  tenant?: string;
  /** The count never went above this, after any event. */
  max?: number;
  /** The count reached at least this at some instant (the limit was really pressed). */
  atLeast?: number;
}

/**
 * The most tasks that were running (or occupying a slot, or live) at once, globally or for one
 * tenant, replayed after every event in commit order: e.g. "at most 1 running per tenant, and the
 * limit of 2 was reached". I3 and I4 check the configured limits; this states the numbers a scenario
 * is about, including that the limit was reached at all.
 */
export const peakOccupancy: ExpectationKind<PeakOccupancy> = {
  kind: 'peak-occupancy',
  class: 'safety',
  description: 'the most tasks running / holding slots / live at once (globally or for a tenant) stayed within max and reached atLeast',
  schema: z
    .strictObject({
      kind: z.literal('peak-occupancy'),
      measure: z.enum(['running', 'occupied', 'live']),
      tenant: z.string().min(1).optional(),
      max: z.number().int().min(0).optional(),
      atLeast: z.number().int().min(0).optional(),
    })
    .refine((spec) => spec.max !== undefined || spec.atLeast !== undefined, { message: 'give max, atLeast or both' })
    .refine((spec) => spec.max === undefined || spec.atLeast === undefined || spec.atLeast <= spec.max, { message: 'atLeast is above max', path: ['atLeast'] }),
  check(spec, run) {
    const analysis = analyse(run);
    const counted = MEASURES[spec.measure];
    let count = 0;
    let peak = 0;
    let peakEvent: number | undefined;
    run.events.forEach((event, position) => {
      if (spec.tenant !== undefined && analysis.tasks.get(event.taskId)?.tenant !== spec.tenant) return;
      const before = analysis.stateBefore[position];
      const after = analysis.stateAfter[position];
      count += (after !== undefined && counted.has(after) ? 1 : 0) - (before !== undefined && counted.has(before) ? 1 : 0);
      if (count > peak) {
        peak = count;
        peakEvent = event.id;
      }
    });
    const scope = spec.tenant === undefined ? 'globally' : `for tenant ${spec.tenant}`;
    const problems: string[] = [];
    if (spec.max !== undefined && peak > spec.max) problems.push(`${peak} tasks were ${spec.measure} at once ${scope} (first after event ${String(peakEvent)}), expected at most ${spec.max}`);
    if (spec.atLeast !== undefined && peak < spec.atLeast) problems.push(`at most ${peak} tasks were ${spec.measure} at once ${scope}, expected the count to reach ${spec.atLeast}`);
    return problems;
  },
};
