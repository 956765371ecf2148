import { z } from 'zod';
import { faultPlanSchema, type FaultPlan } from './faults/plan.ts';
import { FAULT_SOURCES, timedFaultProblems } from './faults/index.ts';
import { perRoundProblems, perRoundSchema } from './faults/rounds.ts';
import { swarmSpecSchema, SWARM_KINDS, type SwarmKind } from './faults/swarm.ts';
import type { ExplicitTask, FloodSpec, ScenarioSpec, WorkloadSpec } from './scenario.ts';
import { durabilityField, expectField, headerFields, modelLatency, phasesFields, queueSchema, supervisorFields, monitorFields, fleetFields, toolsFields, workersFields } from './scenario-sections.ts';
import { PROCESS_CRASH_POWER_LOSS } from './scenario-sections.ts';
import { list, nonNegative, oneOf, probability, range, strict, text, TIERS } from './schema-kit.ts';
import { clientSwarmSchema } from './workloads/client-swarm.ts';
import { configSwarmSchema } from './workloads/config-swarm.ts';
import { floodSpecSchema } from './workloads/flood.ts';
import { roundsSchema } from './workloads/rounds.ts';
import { scriptSchema } from './workloads/script.ts';
import { explicitTaskSchema } from './workloads/tasks.ts';
import { graphDrawingSchema } from './workloads/graph-draw.ts';
import { needsSchema } from './workloads/admission.ts';

/**
 * The explicit form of a scenario: a ScenarioSpec written out whole, a `workload` object and a
 * `faults` object of exactly one of plan, swarm or perRound. It is what `leasehold check` records in a
 * counterexample file, what a test writes out from a catalogue scenario, and how scenario files were
 * written before they listed parts; it is read as it is, every field stated, and its errors name its
 * own paths (`workload.tasks[2].priority`). New files list parts (sim/scenario-schema.ts).
 */
const workloadSchema = strict({
  tenants: list(text(), 1),
  topics: nonNegative(),
  newVersionProbability: probability(),
  priorities: range(0, 30),
  arrivalWindowMs: nonNegative(),
  writeProbability: probability(),
  steps: range(1),
  callsPerStep: range(0),
  tokensPerCall: range(0),
  tiers: list(oneOf(TIERS), 1),
  poisonProbability: probability().optional(),
  graphs: graphDrawingSchema.optional(),
  script: scriptSchema.optional(),
  rounds: roundsSchema.optional(),
  poisonTasks: nonNegative().optional(),
  tasks: list(explicitTaskSchema).optional(),
  floods: list(floodSpecSchema).optional(),
  clientSwarm: clientSwarmSchema.optional(),
  needs: needsSchema.optional(),
  criticalProbability: probability().optional(),
}).superRefine((workload, context) => {
  if (workload.poisonTasks !== undefined) {
    if (workload.rounds === undefined) context.addIssue({ code: 'custom', path: ['poisonTasks'], message: 'needs a rounds workload (workload.rounds)' });
    else if (workload.poisonTasks > workload.rounds.count * workload.rounds.tasksPerRound) {
      context.addIssue({ code: 'custom', path: ['poisonTasks'], message: `exceeds the ${workload.rounds.count * workload.rounds.tasksPerRound} tasks of the rounds` });
    }
  }
  if (workload.topics === 0 && workload.rounds === undefined && (workload.tasks ?? []).length === 0 && (workload.floods ?? []).length === 0) {
    context.addIssue({ code: 'custom', message: 'has no tasks: give topics above 0, rounds, tasks or floods' });
  }
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

const explicitObject = strict({
  ...headerFields,
  queue: queueSchema,
  workers: strict(workersFields),
  configSwarm: configSwarmSchema.optional(),
  workload: workloadSchema,
  model: strict({ latencyMs: modelLatency }),
  tools: strict(toolsFields),
  supervisor: strict(supervisorFields),
  monitor: strict(monitorFields).optional(),
  fleet: strict(fleetFields).optional(),
  durability: durabilityField,
  faults: faultsSchema,
  phases: strict(phasesFields),
  expect: expectField,
});

type ExplicitValue = z.output<typeof explicitObject>;

/** The explicit form: the shape, then the checks that span fields. */
export const explicitScenarioSchema = explicitObject.check(z.superRefine((value, context) => crossCheck(value, context), { when: (payload) => payload.issues.length === 0 }));

function crossCheck(value: ExplicitValue, context: z.core.$RefinementCtx<unknown>): void {
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
    if (value.workload.rounds === undefined) context.addIssue({ code: 'custom', path: ['faults', 'perRound'], message: 'needs a rounds workload (workload.rounds)' });
    for (const { section, message } of perRoundProblems(faults.perRound, { modelMs: value.model.latencyMs, toolMs: value.tools.latencyMs })) {
      context.addIssue({ code: 'custom', path: [section, 'latencyMs'], message });
    }
  }
}

/** The spec a validated explicit file holds: the fields for people dropped. */
export function explicitToSpec(value: ExplicitValue): ScenarioSpec {
  const { $schema: _schema, notes: _notes, ...spec } = value;
  return spec as ScenarioSpec;
}

/**
 * Compile-time: every field of ScenarioSpec and of its parts is in the explicit form (a field added to
 * the type and not here fails the build here, not at the first file that uses it).
 */
type Missing<Type, Schema> = Exclude<keyof Type, keyof Schema>;
export const SCHEMA_COVERS_SCENARIO_SPEC: [
  Missing<ScenarioSpec, ExplicitValue>,
  Missing<WorkloadSpec, ExplicitValue['workload']>,
  Missing<ExplicitTask, z.output<typeof explicitTaskSchema>>,
  Missing<FloodSpec, z.output<typeof floodSpecSchema>>,
  Exclude<SwarmKind, (typeof SWARM_KINDS)[number]>,
] extends [never, never, never, never, never]
  ? true
  : false = true;
