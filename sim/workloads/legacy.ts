import { readFileSync } from 'node:fs';
import type { Tier } from '../../src/queue/types.ts';
import type { TaskScript } from '../actors/scripted-model.ts';
import type { WorkloadSpec } from '../scenario.ts';
import { list, nonNegative, oneOf, probability, range, strict, text, TIERS } from '../schema-kit.ts';
import { needsSchema } from './admission.ts';
import { clientSwarmSchema, type ClientSwarmSpec } from './client-swarm.ts';
import type { ScriptDrawing } from './draw.ts';
import { floodSpecSchema, type FloodSpec } from './flood.ts';
import { graphDrawingSchema, type GraphDrawing } from './graph-draw.ts';
import { roundsSchema, type RoundsSpec } from './rounds.ts';
import { scriptSchema } from './script.ts';
import { explicitTaskSchema, type ExplicitTask } from './tasks.ts';
import type { WorkloadPart } from './index.ts';

/**
 * The workload as the runner took it before it kept the parts: one object of exclusive modes (topics,
 * unless `rounds` is given; a drawn script, unless `script` is), which the explicit form and every
 * counterexample file written then record. Such files are still read: `upgradeFlatWorkload` turns
 * the object into the typed parts that draw exactly the same arrivals, so a seed replays with the same
 * trace hash.
 */
export interface FlatWorkload {
  tenants: string[];
  topics: number;
  newVersionProbability: number;
  priorities: [number, number];
  arrivalWindowMs: number;
  writeProbability: number;
  steps: [number, number];
  callsPerStep: [number, number];
  tokensPerCall: [number, number];
  tiers: Tier[];
  poisonProbability?: number;
  graphs?: GraphDrawing;
  script?: TaskScript;
  rounds?: RoundsSpec;
  poisonTasks?: number;
  needs?: Record<string, number>;
  criticalProbability?: number;
  tasks?: ExplicitTask[];
  floods?: FloodSpec[];
  clientSwarm?: ClientSwarmSpec;
}

/** A workload object in that form: an object without `parts`. */
export function isFlatWorkload(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !('parts' in value);
}

/** The explicit form's workload before parts, every field stated, read as it was. */
export const flatWorkloadSchema = strict({
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
  const problem = upgradeProblem(workload as FlatWorkload);
  if (problem !== undefined) context.addIssue({ code: 'custom', path: problem.path, message: problem.message });
});

const sameList = (a: readonly unknown[], b: readonly unknown[]) => a.length === b.length && a.every((item, index) => item === b[index]);

/**
 * What the parts cannot say of a flat workload, if anything. Without topics or rounds, a flat object
 * still states tenants, priorities and tiers, which only a client swarm drew from (a newer version of
 * a topic, a burst's new topics); parts draw those from the tenants the tasks and floods name,
 * priorities 0 to 30 and the standard tier, as a file of parts always resolved them. Anything else
 * there cannot be kept.
 */
function upgradeProblem(flat: FlatWorkload): { path: string[]; message: string } | undefined {
  if (flat.rounds !== undefined || flat.topics > 0 || flat.clientSwarm === undefined) return undefined;
  const tenants = [...new Set([...(flat.tasks ?? []).map((task) => task.tenant), ...(flat.floods ?? []).map((flood) => flood.tenant)])];
  const without = 'a client swarm without topics or rounds draws its new requests';
  if (!sameList(flat.tenants, tenants)) return { path: ['tenants'], message: `${without} from the tenants its tasks and floods name (${tenants.join(', ') || 'none'}); give a topics or rounds part for other tenants` };
  if (flat.priorities[0] !== 0 || flat.priorities[1] !== 30) return { path: ['priorities'], message: `${without} at priorities 0 to 30; give a topics or rounds part for others` };
  if (!sameList(flat.tiers, ['standard'])) return { path: ['tiers'], message: `${without} in the standard tier; give a topics or rounds part for others` };
  return undefined;
}

/** An error of a flat workload that has no typed parts (upgradeFlatWorkload); `field` is the path inside the workload. */
export class FlatWorkloadError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'FlatWorkloadError';
  }
}

/**
 * The typed parts a flat workload stands for, drawing exactly the arrivals it drew: the topics or
 * rounds part (rounds when both are given, as the flat form ran them), one tasks part with its tasks,
 * a flood part per flood, the client swarm; and its script drawing. A flat workload whose tenants,
 * priorities or tiers only a client swarm without topics or rounds would draw from, and that differ
 * from what parts give it, is refused with a FlatWorkloadError naming the field.
 */
export function upgradeFlatWorkload(flat: FlatWorkload): WorkloadSpec {
  const problem = upgradeProblem(flat);
  if (problem !== undefined) throw new FlatWorkloadError(problem.path.join('.'), problem.message);
  const scripts: ScriptDrawing = { writeProbability: flat.writeProbability, steps: flat.steps, callsPerStep: flat.callsPerStep, tokensPerCall: flat.tokensPerCall };
  if (flat.poisonProbability !== undefined) scripts.poisonProbability = flat.poisonProbability;
  if (flat.graphs !== undefined) scripts.graphs = flat.graphs;
  if (flat.script !== undefined) scripts.script = flat.script;
  const admission = { ...(flat.needs === undefined ? {} : { needs: flat.needs }), ...(flat.criticalProbability === undefined ? {} : { criticalProbability: flat.criticalProbability }) };
  const parts: WorkloadPart[] = [];
  if (flat.rounds !== undefined) {
    const { count, everyMs, tasksPerRound } = flat.rounds;
    parts.push({ kind: 'rounds', count, everyMs, tasksPerRound, tenants: flat.tenants, priorities: flat.priorities, tiers: flat.tiers, poisonTasks: flat.poisonTasks ?? 0, ...admission });
  } else if (flat.topics > 0) {
    parts.push({ kind: 'topics', count: flat.topics, tenants: flat.tenants, priorities: flat.priorities, newVersionProbability: flat.newVersionProbability, arrivalWindowMs: flat.arrivalWindowMs, tiers: flat.tiers, ...admission });
  }
  // A task without a tier took the first of the flat workload's tiers; a task part's takes standard.
  const tierOf = (task: ExplicitTask): ExplicitTask => (task.tier === undefined && flat.tiers[0] !== 'standard' ? { ...task, tier: flat.tiers[0]! } : task);
  if ((flat.tasks ?? []).length > 0) parts.push({ kind: 'tasks', tasks: flat.tasks!.map(tierOf) });
  // A flood without tiers took the flat workload's; a flood part's takes standard.
  const standard = sameList(flat.tiers, ['standard']);
  for (const flood of flat.floods ?? []) parts.push({ kind: 'flood', ...flood, ...(flood.tiers === undefined && !standard ? { tiers: flat.tiers } : {}) });
  if (flat.clientSwarm !== undefined) parts.push({ kind: 'client-swarm', ...flat.clientSwarm });
  return { parts, scripts };
}

/**
 * A scenario as a counterexample file records it, its workload in either form: as it is when it keeps
 * its parts, else with the flat workload turned into parts (upgradeFlatWorkload; a FlatWorkloadError
 * when it cannot be). Read for shape only, as such files are.
 */
export function upgradeRecordedSpec<Spec extends { workload: unknown }>(spec: Spec): Spec & { workload: WorkloadSpec } {
  if (!isFlatWorkload(spec.workload)) return spec as Spec & { workload: WorkloadSpec };
  return { ...spec, workload: upgradeFlatWorkload(spec.workload as FlatWorkload) };
}

/** Whether the counterexample file at `path` records its workload in the form before parts (read as JSON again; false when it cannot be). */
export function recordsFlatWorkload(path: string): boolean {
  try {
    return isFlatWorkload((JSON.parse(readFileSync(path, 'utf8')) as { scenarioSpec?: { workload?: unknown } }).scenarioSpec?.workload);
  } catch {
    return false;
  }
}
