import type { z } from 'zod';
import type { Tier } from '../../src/queue/types.ts';
import type { SeededRandom } from '../random.ts';
import { list, nonNegative, oneOf, part, positive, range, strict, text, TIERS, withDefaults } from '../schema-kit.ts';
import { drawRequest, type Arrival, type ScriptDrawing } from './draw.ts';
import { admitted, criticalSchema, needsSchema, type Needs } from './admission.ts';

/**
 * A flood: a continuous arrival process, `count` tasks every `everyMs` from `fromMs` until `untilMs`
 * (exclusive), each on its own topic (a flood of high-priority work, one tenant filling its budget).
 * The flood part (`FloodPart`) is what a scenario holds; this is how the explicit form before parts
 * wrote one (workloads/legacy.ts reads it).
 */
export interface FloodSpec {
  tenant: string;
  /** Topics are `${topicPrefix}-${n}`; labels too. */
  topicPrefix: string;
  /** Drawn per task from this inclusive range. */
  priority: [number, number];
  everyMs: number;
  fromMs: number;
  untilMs: number;
  /** Tasks per arrival; default 1. */
  count?: number;
  /** Each task picks one, uniformly; default: the workload's tiers. */
  tiers?: Tier[];
  /** A1: units of the queue's named budgets each task needs. */
  needs?: Needs;
  /** A2: every task of the flood is critical work. */
  critical?: boolean;
}

const floodFields = {
  tenant: text(),
  topicPrefix: text().meta({ description: 'Topics (and labels) are `${topicPrefix}-${n}`; default: the tenant.' }),
  priority: range(0, 30).meta({ description: 'Base priority, drawn per task from [min, max]; default [0, 30].' }),
  everyMs: positive(),
  fromMs: nonNegative().meta({ description: 'The first arrival, ms from the start; default 0.' }),
  untilMs: nonNegative().meta({ description: 'Arrivals stop before this time (exclusive).' }),
  count: positive().optional().meta({ description: 'Tasks per arrival; default 1.' }),
  tiers: list(oneOf(TIERS), 1).optional().meta({ description: 'Each task picks one, uniformly; default ["standard"].' }),
  needs: needsSchema.optional(),
  critical: criticalSchema.optional(),
};

function windowProblems(flood: { fromMs: number; untilMs: number }, context: z.core.$RefinementCtx<unknown>): void {
  if (flood.untilMs <= flood.fromMs) context.addIssue({ code: 'custom', path: ['untilMs'], message: `must be after fromMs (${flood.fromMs}), got ${flood.untilMs}` });
}

/** The explicit form's `workload.floods[]`, before parts (workloads/legacy.ts). */
export const floodSpecSchema = strict(floodFields, '`count` tasks arrive every `everyMs` from `fromMs` until `untilMs` (exclusive), each on its own topic.').superRefine(windowProblems);

export const floodPart = part(
  'flood',
  { ...withDefaults(floodFields, { priority: [0, 30] as [number, number], fromMs: 0 }), topicPrefix: floodFields.topicPrefix.optional() },
  '`count` tasks of one tenant arrive every `everyMs` from `fromMs` until `untilMs` (exclusive), each on its own topic.',
).superRefine(windowProblems);
export type FloodPart = z.output<typeof floodPart>;

/** The tiers a flood's tasks pick from: its own, or standard. */
export function floodTiers(flood: Pick<FloodPart, 'tiers'>): Tier[] {
  return flood.tiers ?? ['standard'];
}

export function floodArrivals(random: SeededRandom, scripts: ScriptDrawing, floods: readonly FloodPart[]): Arrival[] {
  const arrivals: Arrival[] = [];
  for (const flood of floods) {
    let n = 0;
    const drawing = { priorities: flood.priority, tiers: floodTiers(flood), scripts };
    const topicPrefix = flood.topicPrefix ?? flood.tenant;
    for (let atMs = flood.fromMs; atMs < flood.untilMs; atMs += flood.everyMs) {
      for (let k = 0; k < (flood.count ?? 1); k++) {
        n++;
        const topic = `${topicPrefix}-${n}`;
        const request = admitted(drawRequest(random, drawing, flood.tenant, topic, 1), flood.needs, flood.critical);
        arrivals.push({ atMs, request, label: topic });
      }
    }
  }
  return arrivals;
}
