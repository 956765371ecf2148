import { z } from 'zod';
import type { Tier } from '../../src/queue/types.ts';
import type { TaskScript } from '../actors/scripted-model.ts';
import type { WorkloadSpec } from '../scenario.ts';
import { list } from '../schema-kit.ts';
import { clientSwarmPart, resolveClientSwarm } from './client-swarm.ts';
import { floodPart, resolveFlood } from './flood.ts';
import type { GraphDrawing } from './graph-draw.ts';
import { roundsPart } from './rounds.ts';
import { resolveTasks, tasksPart, type ExplicitTask } from './tasks.ts';
import { topicsPart } from './topics.ts';

/**
 * The workload parts a scenario file lists under `workload` (FoundationDB-style: each a typed part
 * with defaults, so a file states only what differs): drawn arrivals from one `topics` or `rounds`
 * part, and beside it any number of `tasks` and `flood` parts. They resolve to the runner's
 * WorkloadSpec; each part's arrivals are drawn by its own file from its own stream.
 */
export const workloadPartSchema = z.discriminatedUnion('kind', [topicsPart, roundsPart, tasksPart, floodPart, clientSwarmPart]);
export type WorkloadPart = z.output<typeof workloadPartSchema>;

export const workloadPartsSchema = list(workloadPartSchema, 1, 'a list of workload parts').meta({
  description: 'Workload parts: at most one topics or rounds part (drawn arrivals), any tasks and flood parts beside it, and at most one client-swarm part over them all.',
});

/** How the model draws each task's script (the parts form keeps these in `model`). */
export interface ScriptDrawing {
  writeProbability: number;
  steps: [number, number];
  callsPerStep: [number, number];
  tokensPerCall: [number, number];
  poisonProbability?: number | undefined;
  graphs?: GraphDrawing | undefined;
  script?: TaskScript | undefined;
}

/** At most one part draws arrivals (topics or rounds), and at most one client swarm: paths inside `workload`. */
export function workloadListProblems(parts: readonly WorkloadPart[]): { path: (string | number)[]; message: string }[] {
  const indexed = parts.map((item, index) => ({ item, index }));
  const drawing = indexed.filter(({ item }) => item.kind === 'topics' || item.kind === 'rounds');
  const swarms = indexed.filter(({ item }) => item.kind === 'client-swarm');
  return [
    ...drawing.slice(1).map(({ index }) => ({
      path: [index, 'kind'],
      message: `a scenario draws its arrivals from one topics or rounds part, and workload[${drawing[0]!.index}] is one; add tasks or flood parts beside it instead`,
    })),
    ...swarms.slice(1).map(({ index }) => ({ path: [index, 'kind'], message: `a scenario has at most one client-swarm part, and workload[${swarms[0]!.index}] is one` })),
  ];
}

export function resolveWorkload(parts: readonly WorkloadPart[], drawing: ScriptDrawing): WorkloadSpec {
  const drawn = parts.find((item) => item.kind === 'topics' || item.kind === 'rounds');
  const tiers: Tier[] = drawn?.tiers ?? ['standard'];
  const tasks = parts.flatMap((item) => (item.kind === 'tasks' ? resolveTasks(item) : []));
  const floods = parts.flatMap((item) => (item.kind === 'flood' ? [resolveFlood(item, tiers)] : []));
  const spec: WorkloadSpec = {
    tenants: drawn?.tenants ?? [...new Set([...tasks.map((task) => task.tenant), ...floods.map((flood) => flood.tenant)])],
    topics: drawn?.kind === 'topics' ? drawn.count : 0,
    newVersionProbability: drawn?.kind === 'topics' ? drawn.newVersionProbability : 0,
    priorities: drawn?.priorities ?? [0, 30],
    arrivalWindowMs: drawn?.kind === 'topics' ? drawn.arrivalWindowMs : 0,
    writeProbability: drawing.writeProbability,
    steps: drawing.steps,
    callsPerStep: drawing.callsPerStep,
    tokensPerCall: drawing.tokensPerCall,
    tiers,
  };
  // Present only when given: a poison probability costs a draw per script, even at 0.
  if (drawing.poisonProbability !== undefined) spec.poisonProbability = drawing.poisonProbability;
  if (drawing.script !== undefined) spec.script = drawing.script;
  // A7: present only when given: a graph step costs draws of the script's stream.
  if (drawing.graphs !== undefined) spec.graphs = drawing.graphs;
  // A1, A2: the drawn tasks' needs and the chance of critical work, present only when given (a chance costs draws of its own stream).
  if (drawn?.needs !== undefined && Object.keys(drawn.needs).length > 0) spec.needs = drawn.needs;
  if (drawn?.criticalProbability !== undefined) spec.criticalProbability = drawn.criticalProbability;
  if (drawn?.kind === 'rounds') {
    spec.rounds = { count: drawn.count, everyMs: drawn.everyMs, tasksPerRound: drawn.tasksPerRound };
    if (drawn.poisonTasks > 0) spec.poisonTasks = drawn.poisonTasks;
  }
  // A task's tier defaults to standard, whatever tier the drawn tasks start their list with.
  if (tasks.length > 0) spec.tasks = tasks.map((task): ExplicitTask => (task.tier === undefined && tiers[0] !== 'standard' ? { ...task, tier: 'standard' } : task));
  if (floods.length > 0) spec.floods = floods;
  const swarm = parts.find((item) => item.kind === 'client-swarm');
  if (swarm !== undefined) spec.clientSwarm = resolveClientSwarm(swarm);
  return spec;
}
