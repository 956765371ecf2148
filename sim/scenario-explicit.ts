import { z } from 'zod';
import { faultPlanSchema, type FaultPlan } from './faults/plan.ts';
import { FAULT_SOURCES, timedFaultProblems } from './faults/index.ts';
import { perRoundProblems, perRoundSchema } from './faults/rounds.ts';
import { swarmSpecSchema, SWARM_KINDS, type SwarmKind } from './faults/swarm.ts';
import type { ExplicitTask, FloodSpec, ScenarioSpec, ScriptDrawing, WorkloadSpec } from './scenario.ts';
import { durabilityField, expectField, headerFields, modelLatency, phasesFields, queueSchema, supervisorFields, monitorFields, fleetFields, toolsFields, workersFields } from './scenario-sections.ts';
import { PROCESS_CRASH_POWER_LOSS } from './scenario-sections.ts';
import { probability, range, strict } from './schema-kit.ts';
import { configSwarmSchema } from './workloads/config-swarm.ts';
import { floodSpecSchema } from './workloads/flood.ts';
import { scriptSchema } from './workloads/script.ts';
import { explicitTaskSchema } from './workloads/tasks.ts';
import { graphDrawingSchema } from './workloads/graph-draw.ts';
import { workloadListProblems, workloadPartsSchema } from './workloads/index.ts';
import { flatWorkloadSchema, isFlatWorkload, upgradeFlatWorkload, type FlatWorkload } from './workloads/legacy.ts';

/**
 * The explicit form of a scenario: a ScenarioSpec written out whole, a `workload` object and a
 * `faults` object of exactly one of plan, swarm or perRound. It is what `leasehold check` records in a
 * counterexample file and what a test writes out from a catalogue scenario; it is read as it is, every
 * section stated, and its errors name its own paths (`workload.parts[1].tasks[2].priority`). Its
 * workload keeps the typed parts of a scenario file (`parts`, read by the same part schemas, so one
 * schema serves both forms) and how the model draws each task's script (`scripts`, every field stated).
 *
 * A workload object without `parts` is the form before parts (one object of exclusive modes,
 * workloads/legacy.ts), as explicit files and counterexamples were written before: it is read as it
 * was and turned into the parts that draw the same arrivals. New files list parts (sim/scenario-schema.ts).
 */
const scriptsSchema = strict(
  {
    writeProbability: probability(),
    steps: range(1),
    callsPerStep: range(0),
    tokensPerCall: range(0),
    poisonProbability: probability().optional(),
    graphs: graphDrawingSchema.optional(),
    script: scriptSchema.optional(),
  },
  "How the model draws each task's script: a scenario file's model section without its latency.",
);

const workloadSchema = strict({ parts: workloadPartsSchema, scripts: scriptsSchema }, 'The workload: its typed parts, and how the model draws each task\'s script.').superRefine((workload, context) => {
  for (const problem of workloadListProblems(workload.parts, 'workload.parts')) context.addIssue({ code: 'custom', message: problem.message, path: ['parts', ...problem.path] });
});

const faultsSchema = strict(
  { plan: faultPlanSchema.optional(), swarm: swarmSpecSchema.optional(), perRound: perRoundSchema.optional() },
  'Exactly one of: plan (explicit faults), swarm (drawn per seed), perRound (one fault per round, drawn per seed).',
).check(
  z.superRefine(
    (faults, context) => {
      // Checked whatever else is wrong inside, and reported first: with two sources given, the
      // problems inside either are beside the point.
      const given = FAULT_SOURCES.filter((source) => faults[source] !== undefined);
      if (given.length !== 1) {
        const got = given.length === 0 ? 'none' : given.join(' and ');
        context.addIssue({ code: 'custom', params: { first: true }, message: `needs exactly one of plan (explicit faults), swarm (drawn per seed) or perRound (one fault per round), got ${got}` });
      }
    },
    { when: (payload) => typeof payload.value === 'object' && payload.value !== null && !Array.isArray(payload.value) },
  ),
);

/** Every section but the workload: the same in the explicit form and in the form before parts. */
const sections = {
  ...headerFields,
  queue: queueSchema,
  workers: strict(workersFields),
  configSwarm: configSwarmSchema.optional(),
  model: strict({ latencyMs: modelLatency }),
  tools: strict(toolsFields),
  supervisor: strict(supervisorFields),
  monitor: strict(monitorFields).optional(),
  fleet: strict(fleetFields).optional(),
  durability: durabilityField,
  faults: faultsSchema,
  phases: strict(phasesFields),
  expect: expectField,
};

const explicitObject = strict({ ...sections, workload: workloadSchema });
const flatObject = strict({ ...sections, workload: flatWorkloadSchema });

type ExplicitValue = z.output<typeof explicitObject>;
type FlatValue = z.output<typeof flatObject>;

const checked = <T extends z.ZodType>(schema: T) =>
  schema.check(z.superRefine((value, context) => crossCheck(value as ExplicitValue | FlatValue, context), { when: (payload) => payload.issues.length === 0 }));

/** The explicit form: the shape, then the checks that span fields. */
export const explicitScenarioSchema = checked(explicitObject);
/** The explicit form before parts (a flat workload object), read as it was. */
export const flatScenarioSchema = checked(flatObject);

/** A file in the explicit form whose workload is in the form before parts (an object without `parts`). */
export function isFlatForm(value: unknown): boolean {
  return isFlatWorkload((value as { workload?: unknown } | null)?.workload);
}

/** Whether a workload of either form arrives in rounds. */
function hasRounds(workload: ExplicitValue['workload'] | FlatValue['workload']): boolean {
  return 'parts' in workload ? workload.parts.some((item) => item.kind === 'rounds') : workload.rounds !== undefined;
}

function crossCheck(value: ExplicitValue | FlatValue, context: z.core.$RefinementCtx<unknown>): void {
  const { faults } = value;
  if (value.durability === 'process_crash') {
    const timed = (faults.plan as FaultPlan | undefined)?.timed.some((fault) => fault.kind === 'power-loss') === true;
    const drawn = faults.swarm?.kinds.includes('power-loss') === true;
    if (timed || drawn) context.addIssue({ code: 'custom', path: ['faults', timed ? 'plan' : 'swarm'], message: PROCESS_CRASH_POWER_LOSS });
  }
  if (faults.plan !== undefined) {
    (faults.plan as FaultPlan).timed.forEach((fault, index) => {
      for (const problem of timedFaultProblems(fault, value.workers.count, value.phases.safetyMs)) context.addIssue({ code: 'custom', ...problem, path: ['faults', 'plan', 'timed', index, ...problem.path] });
    });
  }
  if (faults.perRound !== undefined) {
    if (!hasRounds(value.workload)) {
      const where = 'parts' in value.workload ? 'a rounds part in workload.parts' : 'workload.rounds';
      context.addIssue({ code: 'custom', path: ['faults', 'perRound'], message: `needs a rounds workload (${where})` });
    }
    for (const { section, message } of perRoundProblems(faults.perRound, { modelMs: value.model.latencyMs, toolMs: value.tools.latencyMs })) {
      context.addIssue({ code: 'custom', path: [section, 'latencyMs'], message });
    }
  }
}

/** The spec a validated explicit file holds: the fields for people dropped, a workload in the form before parts turned into parts. */
export function explicitToSpec(value: ExplicitValue | FlatValue): ScenarioSpec {
  const { $schema: _schema, notes: _notes, workload, ...spec } = value;
  return { ...spec, workload: 'parts' in workload ? (workload as WorkloadSpec) : upgradeFlatWorkload(workload as FlatWorkload) } as ScenarioSpec;
}

/**
 * Compile-time: every field of ScenarioSpec and of its parts is in the explicit form (a field added to
 * the type and not here fails the build here, not at the first file that uses it).
 */
type Missing<Type, Schema> = Exclude<keyof Type, keyof Schema>;
export const SCHEMA_COVERS_SCENARIO_SPEC: [
  Missing<ScenarioSpec, ExplicitValue>,
  Missing<WorkloadSpec, ExplicitValue['workload']>,
  Missing<ScriptDrawing, ExplicitValue['workload']['scripts']>,
  Missing<FlatWorkload, FlatValue['workload']>,
  Missing<ExplicitTask, z.output<typeof explicitTaskSchema>>,
  Missing<FloodSpec, z.output<typeof floodSpecSchema>>,
  Exclude<SwarmKind, (typeof SWARM_KINDS)[number]>,
] extends [never, never, never, never, never, never, never]
  ? true
  : false = true;
