import { z } from 'zod';
import { faultListProblems, faultPartsSchema, planProblems, resolveFaults, timedFaultProblems, timedFaultsOf } from './faults/index.ts';
import { faultPlanSchema, type FaultPlan } from './faults/plan.ts';
import { perRoundProblems } from './faults/rounds.ts';
import type { ScenarioSpec } from './scenario.ts';
import { explicitScenarioSchema, explicitToSpec, flatScenarioSchema, isFlatForm } from './scenario-explicit.ts';
import {
  durabilityField,
  PROCESS_CRASH_POWER_LOSS,
  expectField,
  headerFields,
  MODEL_DEFAULTS,
  modelFields,
  PHASES_DEFAULTS,
  phasesFields,
  queueSchema,
  sectionWithDefaults,
  SUPERVISOR_DEFAULTS,
  supervisorFields,
  monitorFields,
  fleetFields,
  FLEET_DEFAULTS,
  TOOLS_DEFAULTS,
  toolsFields,
  WORKERS_DEFAULTS,
  workersFields,
} from './scenario-sections.ts';
import { strict } from './schema-kit.ts';
import { defaultExpectation, describeIssues, formatPath, joinField, type ScenarioProblem } from './schema-errors.ts';
import { configSwarmSection, resolveConfigSwarm } from './workloads/config-swarm.ts';
import { workloadListProblems, workloadPartsSchema, type ScriptDrawing } from './workloads/index.ts';

export { SCHEMA_COVERS_SCENARIO_SPEC } from './scenario-explicit.ts';
export { formatPath, type ScenarioProblem } from './schema-errors.ts';
export { faultPlanSchema, planProblems };

/**
 * The scenario file format (FoundationDB-style): one JSON object per scenario whose `workload` is a
 * list of typed parts (topics, rounds, tasks, flood: sim/workloads/, one file each) and whose `faults`
 * is a list of parts too (one per fault kind, a whole fault-plan, or faults drawn per seed:
 * sim/faults/, one file each). Every part and every other section has defaults, so a file states only
 * what differs. Every object is strict, so a typo is refused instead of silently ignored, and every
 * field carries the words of what it expects: `workload[1].tasks[2].priority: expected an integer from
 * 0 to 30, got 31`. The checks that span parts (one drawn workload, a per-round fault needs rounds,
 * worker indexes, faults within the safety phase) run once the shape is right; then the parts resolve
 * into the ScenarioSpec the runner takes, whose workload keeps the parts as they are, typed, with the
 * model's script drawing beside them. `leasehold scenarios --schema` prints this as a JSON Schema.
 *
 * A file whose `workload` is an object is the explicit form (sim/scenario-explicit.ts), read as it is.
 */
const partsObject = strict({
  ...headerFields,
  queue: queueSchema.default(() => ({})),
  workers: sectionWithDefaults(workersFields, WORKERS_DEFAULTS, 'The simulated worker pool.'),
  configSwarm: configSwarmSection,
  model: sectionWithDefaults(modelFields, MODEL_DEFAULTS, 'The simulated model: its latency, and the script each task runs (one stub script, or drawn per task).'),
  tools: sectionWithDefaults(toolsFields, TOOLS_DEFAULTS, 'The simulated tools.'),
  supervisor: sectionWithDefaults(supervisorFields, SUPERVISOR_DEFAULTS, 'The supervisor that confirms a stop only once the worker really is dead.'),
  monitor: strict({ everyMs: monitorFields.everyMs, offsetMs: monitorFields.offsetMs.default(0) }, 'A5: a monitor reading queue.signals() every everyMs of the safety phase; each read is recorded and judged by I22.').optional(),
  fleet: sectionWithDefaults(fleetFields, FLEET_DEFAULTS, 'The fleet: every actor on its own connection, its transactions interleaved with the others at their BEGIN.'),
  durability: durabilityField,
  workload: workloadPartsSchema,
  faults: faultPartsSchema.default(() => []),
  phases: sectionWithDefaults(phasesFields, PHASES_DEFAULTS, 'A safety phase with faults, then a liveness phase that must drain (S5).'),
  expect: expectField,
});

type PartsValue = z.output<typeof partsObject>;
type Context = z.core.$RefinementCtx<unknown>;

/** The parts form: the shape, then the checks that span parts. */
export const scenarioFileSchema = partsObject.check(z.superRefine((value, context) => crossCheck(value, context), { when: (payload) => payload.issues.length === 0 }));

function crossCheck(value: PartsValue, context: Context): void {
  for (const problem of workloadListProblems(value.workload)) context.addIssue({ code: 'custom', message: problem.message, path: ['workload', ...problem.path] });
  for (const problem of faultListProblems(value.faults)) context.addIssue({ code: 'custom', message: problem.message, path: ['faults', ...problem.path] });
  for (const { fault, path } of timedFaultsOf(value.faults)) {
    for (const problem of timedFaultProblems(fault, value.workers.count, value.phases.safetyMs)) context.addIssue({ code: 'custom', message: problem.message, path: ['faults', ...path, ...problem.path] });
  }
  needsProblems(value, context);
  if (value.durability === 'process_crash') {
    value.faults.forEach((item, index) => {
      if (powerLossIn(item)) context.addIssue({ code: 'custom', path: ['faults', index], message: PROCESS_CRASH_POWER_LOSS });
    });
  }
  const hasRounds = value.workload.some((item) => item.kind === 'rounds');
  value.faults.forEach((item, index) => {
    if (item.kind !== 'kill-per-round' && item.kind !== 'pause-per-round') return;
    if (!hasRounds) context.addIssue({ code: 'custom', path: ['faults', index, 'kind'], message: 'needs a rounds part in workload: it hits one worker each round' });
    for (const { section, message } of perRoundProblems(item, { modelMs: value.model.latencyMs, toolMs: value.tools.latencyMs })) context.addIssue({ code: 'custom', path: [section, 'latencyMs'], message });
  });
}

/** A fault part that runs or may draw a power loss. */
function powerLossIn(item: PartsValue['faults'][number]): boolean {
  const value = item as { kind: string; kinds?: readonly string[]; timed?: readonly { kind: string }[] };
  if (value.kind === 'power-loss') return true;
  if (value.kind === 'swarm') return (value.kinds ?? []).includes('power-loss');
  if (value.kind === 'fault-plan') return (value.timed ?? []).some((fault) => fault.kind === 'power-loss');
  return false;
}

/** A1: every budget a workload part's needs name is declared in queue.budgets (the queue would refuse the enqueue invalid_input). */
function needsProblems(value: PartsValue, context: Context): void {
  const declared = Object.keys((value.queue as { budgets?: Record<string, unknown> }).budgets ?? {});
  const check = (needs: Record<string, number> | undefined, path: (string | number)[]) => {
    for (const budget of Object.keys(needs ?? {})) {
      if (!declared.includes(budget)) {
        const known = declared.length === 0 ? 'the queue declares no budgets (queue.budgets)' : `queue.budgets declares ${declared.join(', ')}`;
        context.addIssue({ code: 'custom', path: [...path, 'needs', budget], message: `names no budget of the queue: ${known}` });
      }
    }
  };
  value.workload.forEach((item, index) => {
    if (item.kind === 'tasks') {
      check(item.defaults?.needs, ['workload', index, 'defaults']);
      item.tasks.forEach((task, inner) => check(task.needs, ['workload', index, 'tasks', inner]));
    } else if (item.kind === 'topics' || item.kind === 'rounds' || item.kind === 'flood') check(item.needs, ['workload', index]);
  });
}

/** The ScenarioSpec a validated parts file resolves to; `raw` is the file as read (which worker options it states). */
function resolveSpec(value: PartsValue, raw: unknown): ScenarioSpec {
  const { latencyMs, ...model } = value.model;
  // Present only when given: a poison probability costs a draw per script, even at 0, and a graph step draws of the script's stream.
  const scripts: ScriptDrawing = { writeProbability: model.writeProbability, steps: model.steps, callsPerStep: model.callsPerStep, tokensPerCall: model.tokensPerCall };
  if (model.poisonProbability !== undefined) scripts.poisonProbability = model.poisonProbability;
  if (model.graphs !== undefined) scripts.graphs = model.graphs;
  if (model.script !== undefined) scripts.script = model.script;
  const spec: ScenarioSpec = {
    name: value.name,
    description: value.description,
    source: value.source,
    queue: value.queue as ScenarioSpec['queue'],
    workers: value.workers,
    workload: { parts: value.workload, scripts },
    model: { latencyMs },
    tools: value.tools,
    supervisor: value.supervisor,
    fleet: value.fleet,
    faults: resolveFaults(value.faults),
    phases: value.phases,
  };
  if (value.configSwarm !== undefined) {
    const rawWorkers = (raw as { workers?: unknown }).workers;
    const statedWorkers = typeof rawWorkers === 'object' && rawWorkers !== null ? Object.keys(rawWorkers) : [];
    spec.configSwarm = resolveConfigSwarm(value.configSwarm, Object.keys(value.queue), statedWorkers);
  }
  if (value.expect !== undefined) spec.expect = value.expect;
  if (value.monitor !== undefined) spec.monitor = value.monitor;
  if (value.durability !== undefined) spec.durability = value.durability;
  return spec;
}

/** A file in the explicit form: `workload` an object rather than a list of parts. */
function isExplicit(value: unknown): boolean {
  const workload = (value as { workload?: unknown } | null)?.workload;
  return typeof workload === 'object' && workload !== null && !Array.isArray(workload);
}

/** Validates a parsed scenario file: the spec, or every problem found (the first is the one to fix first). */
export function parseScenarioFile(value: unknown): { ok: true; spec: ScenarioSpec } | { ok: false; problems: ScenarioProblem[] } {
  if (isExplicit(value)) {
    const result = (isFlatForm(value) ? flatScenarioSchema : explicitScenarioSchema).safeParse(value, { error: defaultExpectation });
    if (result.success) return { ok: true, spec: explicitToSpec(result.data) };
    const problems = ranked(result.error.issues, value);
    const first = problems.findIndex(isMissingSection);
    if (first >= 0) problems[first] = explicitHint(problems[first]!);
    return { ok: false, problems };
  }
  const result = scenarioFileSchema.safeParse(value, { error: defaultExpectation });
  if (result.success) return { ok: true, spec: resolveSpec(result.data, value) };
  return { ok: false, problems: ranked(result.error.issues, value).map((problem) => partsHint(problem, value)) };
}

const PARTS_EXAMPLE = '"workload": [{ "kind": "topics" }], "faults": [{ "kind": "swarm" }]';

/**
 * A section missing from a file whose workload is an object: that is the explicit form (the format
 * before parts, and what counterexamples record), where every section is stated. Say so, and what a
 * file of parts looks like, where the section would have had its defaults.
 */
function isMissingSection(problem: ScenarioProblem): boolean {
  return /^[A-Za-z$]+$/.test(problem.field) && problem.problem.startsWith('is required');
}

function explicitHint(problem: ScenarioProblem): ScenarioProblem {
  return { ...problem, problem: `${problem.problem}: a workload object is the explicit form, which states every section; a scenario file lists parts instead (${PARTS_EXAMPLE}) and every section has defaults` };
}

/** A faults object beside a list of workload parts: the explicit form's, mixed into a file of parts. */
function partsHint(problem: ScenarioProblem, value: unknown): ScenarioProblem {
  const faults = (value as { faults?: unknown } | null)?.faults;
  if (problem.field !== 'faults' || typeof faults !== 'object' || faults === null || Array.isArray(faults)) return problem;
  const [source] = Object.keys(faults);
  const instead = source === 'swarm' ? '[{ "kind": "swarm", ... }]' : source === 'perRound' ? '[{ "kind": "kill-per-round", ... }] (or pause-per-round)' : '[{ "kind": "kill", "atMs": ... }, ...], one part per fault, or [{ "kind": "fault-plan", "timed": [...], ... }]';
  return { ...problem, problem: `expected a list of fault parts, e.g. ${instead}; an object { plan | swarm | perRound } belongs to the explicit form, whose workload is an object too` };
}

/**
 * First the problems that explain others: two fault sources given, then unknown fields (a typo of a
 * field name also makes the field it meant missing: `tenant: unknown field (did you mean tenants?)`
 * says more than `tenants: is required`). Otherwise in the order of the file's format.
 */
function ranked(issues: readonly z.core.$ZodIssue[], value: unknown): ScenarioProblem[] {
  const rank = (issue: z.core.$ZodIssue) => (issue.code === 'custom' && issue.params?.first === true ? 0 : issue.code === 'unrecognized_keys' ? 1 : 2);
  return describeIssues([...issues].sort((a, b) => rank(a) - rank(b)), value);
}

/** Validates a fault plan as `path` (a counterexample's `plan`): the problems found, none when it is sound. */
export function parseFaultPlan(value: unknown, path: string, workerCount: number): ScenarioProblem[] {
  const result = faultPlanSchema.safeParse(value, { error: defaultExpectation });
  const prefix = path === '' ? [] : path.split('.');
  if (!result.success) return describeIssues(result.error.issues, value).map(({ field, problem }) => ({ field: joinField(prefix, field), problem }));
  return planProblems(result.data as FaultPlan, workerCount).map(({ path: inner, message }) => ({ field: formatPath([...prefix, ...inner]), problem: message }));
}

/** The JSON Schema of a scenario file (what an editor can check while someone types). */
export function scenarioJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(partsObject, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  return {
    $schema: schema.$schema,
    title: 'leasehold scenario',
    description:
      'A leasehold simulator scenario (sim/scenario-schema.ts): a list of workload parts and a list of fault parts, each with defaults, and the sections around them. Generated by `leasehold scenarios --schema`; checks that span parts (one drawn workload, worker indexes, phases) are made by the simulator, not by this schema. The simulator also reads the explicit form (a `workload` object, as counterexample files record a scenario), which this schema does not describe.',
    ...Object.fromEntries(Object.entries(schema).filter(([key]) => key !== '$schema')),
  };
}
