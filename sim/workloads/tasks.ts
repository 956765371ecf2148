import { z } from 'zod';
import type { EnqueueRequest, IncidentContext, Tier } from '../../src/queue/types.ts';
import type { TaskScript } from '../actors/scripted-model.ts';
import type { SeededRandom } from '../random.ts';
import { flag, list, nonNegative, oneOf, part, positive, priority, strict, text, TIERS } from '../schema-kit.ts';
import { drawScript, type Arrival, type ScriptDrawing } from './draw.ts';
import { scriptSchema } from './script.ts';
import { admitted, criticalSchema, needsSchema, type Needs } from './admission.ts';

/** One task written out (seed 000's tables, seed 003's H1/M1/L1), as the runner takes it. */
export interface ExplicitTask {
  /** Arrival, in ms from the start of the run. */
  atMs: number;
  tenant: string;
  topic: string;
  /** Default 1. */
  version?: number;
  priority: number;
  /** Default: standard. */
  tier?: Tier;
  /** The name expectations and reports use for this task, e.g. 'H1'; default: the topic. */
  label?: string;
  /** What its model decides; default: a script drawn from the workload's ranges. */
  script?: TaskScript;
  /** Its worker dies at its first model call, every time (R6). */
  poison?: boolean;
  /** Q14: the task expires this many ms after its arrival. */
  deadlineAfterMs?: number;
  /** The same request is sent again at each of these times (ms from the start): resends (Q1). */
  resendAtMs?: number[];
  /**
   * A buggy client sends the same (tenant, topic, version) again at each of these times with a
   * different input: the queue must refuse it idempotency_conflict (Q1, I9).
   */
  conflictAtMs?: number[];
  /** Verified context for incident grouping (Q17). */
  context?: IncidentContext;
  /** The client cancels the task at this time, ms from the start (Q13): at once if ready, at a step boundary if running. */
  cancelAtMs?: number;
  /** A1: units of the queue's named budgets the task needs (enqueue's `needs`). */
  needs?: Needs;
  /** A2: critical work (enqueue's `critical`). */
  critical?: boolean;
}

const contextSchema = strict(
  {
    brand: text().optional(),
    service: text().optional(),
    stage: text().optional(),
    errorCode: text().optional(),
    deployVersion: text().optional(),
    campaign: text().optional(),
  },
  'Verified context for incident grouping (Q17).',
);

const taskFields = {
  atMs: nonNegative().meta({ description: 'Arrival, in ms from the start of the run.' }),
  tenant: text(),
  topic: text(),
  version: positive().optional(),
  priority: priority(),
  tier: oneOf(TIERS).optional(),
  label: text().optional().meta({ description: "The name expectations and reports use for this task, e.g. 'H1'; default: the topic." }),
  script: scriptSchema.optional().meta({ description: "What its model decides; default: the model's stub script, or one drawn from the model's ranges." }),
  poison: flag().optional().meta({ description: 'Its worker dies at its first model call, every time (R6).' }),
  deadlineAfterMs: nonNegative().optional().meta({ description: 'Q14: the task expires this many ms after its arrival.' }),
  resendAtMs: list(nonNegative()).optional().meta({ description: 'The same request is sent again at each of these times (ms from the start): resends (Q1).' }),
  conflictAtMs: list(nonNegative()).optional().meta({ description: 'The same (tenant, topic, version) is sent again at each of these times with a different input: refused idempotency_conflict (Q1).' }),
  cancelAtMs: nonNegative().optional().meta({ description: 'The client cancels the task at this time, ms from the start (Q13).' }),
  context: contextSchema.optional(),
  needs: needsSchema.optional(),
  critical: criticalSchema.optional(),
};

/** Times that must not come before the task arrives. */
function orderProblems(task: Partial<ExplicitTask> & { atMs: number }, context: z.core.$RefinementCtx<unknown>, path: (string | number)[] = []): void {
  task.resendAtMs?.forEach((atMs, index) => {
    if (atMs < task.atMs) context.addIssue({ code: 'custom', path: [...path, 'resendAtMs', index], message: `a resend at ${atMs} ms comes before the task arrives (atMs ${task.atMs})` });
  });
  if (task.cancelAtMs !== undefined && task.cancelAtMs < task.atMs) {
    context.addIssue({ code: 'custom', path: [...path, 'cancelAtMs'], message: `a cancel at ${task.cancelAtMs} ms comes before the task arrives (atMs ${task.atMs})` });
  }
  task.conflictAtMs?.forEach((atMs, index) => {
    if (atMs < task.atMs) context.addIssue({ code: 'custom', path: [...path, 'conflictAtMs', index], message: `a conflicting resend at ${atMs} ms comes before the task arrives (atMs ${task.atMs})` });
  });
}

/** The explicit form's `workload.tasks[]`, before parts (workloads/legacy.ts). */
export const explicitTaskSchema = strict(taskFields, 'One task of an explicit workload.').superRefine((task, context) => orderProblems(task, context));

const partialTask = strict(
  Object.fromEntries(Object.entries(taskFields).map(([field, schema]) => [field, (schema as z.ZodType).optional()])) as { [K in keyof typeof taskFields]: z.ZodOptional<(typeof taskFields)[K]> },
  'One task: atMs (default 0), tenant, topic and priority (from the part\'s defaults when not here), and what else it needs.',
);

const REQUIRED = { tenant: 'expected a non-empty string', topic: 'expected a non-empty string', priority: 'expected an integer from 0 to 30' } as const;

export const tasksPart = part(
  'tasks',
  {
    defaults: partialTask.optional().meta({ description: 'Fields every task of this part takes unless it states its own (context merged field by field), e.g. { "tenant": "acme", "atMs": 10000 }.' }),
    tasks: list(partialTask, 1),
  },
  'Tasks written out one by one (seed 000\'s tables, seed 003\'s H1/M1/L1): resends, conflicting resends, cancels, deadlines, incident context.',
).superRefine((value, context) => {
  value.tasks.forEach((task, index) => {
    const merged = mergeTask(value.defaults, task);
    for (const [field, expected] of Object.entries(REQUIRED)) {
      if (merged[field as keyof typeof REQUIRED] === undefined) context.addIssue({ code: 'custom', path: ['tasks', index, field], message: `is required (${expected}), here or in the part's defaults` });
    }
    orderProblems(merged, context, ['tasks', index]);
  });
});
export type TasksPart = z.output<typeof tasksPart>;

type PartialTask = Partial<ExplicitTask>;

function mergeTask(defaults: PartialTask | undefined, task: PartialTask): PartialTask & { atMs: number } {
  const stated = (fields: PartialTask | undefined) => Object.fromEntries(Object.entries(structuredClone(fields ?? {})).filter(([, value]) => value !== undefined));
  const merged: PartialTask = { ...stated(defaults), ...stated(task) };
  if (defaults?.context !== undefined && task.context !== undefined) merged.context = { ...defaults.context, ...task.context };
  return { ...merged, atMs: merged.atMs ?? 0 };
}

/** The part's tasks as the runner takes them: each with its defaults applied, and its label (default: the topic). */
export function resolveTasks(value: TasksPart): ExplicitTask[] {
  return value.tasks.map((task) => {
    const merged = mergeTask(value.defaults, task) as ExplicitTask;
    return { ...merged, label: merged.label ?? merged.topic };
  });
}

/** Each task at its time, then its resends and conflicting resends; scripts drawn from the tasks' own stream when not given. */
export function explicitArrivals(random: SeededRandom, scripts: ScriptDrawing, tasks: readonly ExplicitTask[]): Arrival[] {
  const arrivals: Arrival[] = [];
  for (const task of tasks) {
    const version = task.version ?? 1;
    const label = task.label ?? task.topic;
    const script = task.script !== undefined ? structuredClone(task.script) : scripts.script !== undefined ? structuredClone(scripts.script) : drawScript(random, scripts, `${task.tenant}/${task.topic}/v${version}`);
    if (task.poison === true) script.poison = true;
    const request: EnqueueRequest = admitted({ tenant: task.tenant, topic: task.topic, version, priority: task.priority, tier: task.tier ?? 'standard', input: { script } }, task.needs, task.critical);
    if (task.context !== undefined) request.context = { ...task.context };
    const deadlineMs = task.deadlineAfterMs === undefined ? undefined : task.atMs + task.deadlineAfterMs;
    const arrival = (atMs: number): Arrival => (deadlineMs === undefined ? { atMs, request, label } : { atMs, request, label, deadlineMs });
    arrivals.push(task.cancelAtMs === undefined ? arrival(task.atMs) : { ...arrival(task.atMs), cancelAtMs: task.cancelAtMs });
    for (const atMs of task.resendAtMs ?? []) arrivals.push(arrival(atMs));
    for (const [n, atMs] of (task.conflictAtMs ?? []).entries()) {
      const changed: EnqueueRequest = { ...request, input: { script, revision: n + 1 } };
      if (request.needs !== undefined) changed.needs = { ...request.needs };
      arrivals.push(deadlineMs === undefined ? { atMs, request: changed, label } : { atMs, request: changed, label, deadlineMs });
    }
  }
  return arrivals;
}
