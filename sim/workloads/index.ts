import { z } from 'zod';
import type { Tier } from '../../src/queue/types.ts';
import type { WorkloadSpec } from '../scenario.ts';
import { list } from '../schema-kit.ts';
import { clientSwarmPart, swarmOf, type ClientSwarmPart, type ClientSwarmSpec, type SwarmDrawing } from './client-swarm.ts';
import type { ScriptDrawing } from './draw.ts';
import { floodPart, type FloodPart } from './flood.ts';
import { roundsPart, type RoundsPart } from './rounds.ts';
import { resolveTasks, tasksPart, type ExplicitTask } from './tasks.ts';
import { topicsPart, type TopicsPart } from './topics.ts';

export type { ScriptDrawing } from './draw.ts';
export type { ClientSwarmPart, FloodPart, RoundsPart, TopicsPart };
export type { TasksPart } from './tasks.ts';

/**
 * The workload parts a scenario file lists under `workload` (FoundationDB-style: each a typed part
 * with defaults, so a file states only what differs): drawn arrivals from one `topics` or `rounds`
 * part, and beside it any number of `tasks` and `flood` parts. The runner's WorkloadSpec keeps them as
 * they are, typed, in the file's order, and so does a counterexample file; each part's arrivals are
 * drawn by its own file from its own stream.
 */
export const workloadPartSchema = z.discriminatedUnion('kind', [topicsPart, roundsPart, tasksPart, floodPart, clientSwarmPart]);
export type WorkloadPart = z.output<typeof workloadPartSchema>;

export const workloadPartsSchema = list(workloadPartSchema, 1, 'a list of workload parts').meta({
  description: 'Workload parts: at most one topics or rounds part (drawn arrivals), any tasks and flood parts beside it, and at most one client-swarm part over them all.',
});

/** At most one part draws arrivals (topics or rounds), and at most one client swarm: paths inside the list, which the messages call `where`. */
export function workloadListProblems(parts: readonly WorkloadPart[], where = 'workload'): { path: (string | number)[]; message: string }[] {
  const indexed = parts.map((item, index) => ({ item, index }));
  const drawing = indexed.filter(({ item }) => item.kind === 'topics' || item.kind === 'rounds');
  const swarms = indexed.filter(({ item }) => item.kind === 'client-swarm');
  return [
    ...drawing.slice(1).map(({ index }) => ({
      path: [index, 'kind'],
      message: `a scenario draws its arrivals from one topics or rounds part, and ${where}[${drawing[0]!.index}] is one; add tasks or flood parts beside it instead`,
    })),
    ...swarms.slice(1).map(({ index }) => ({ path: [index, 'kind'], message: `a scenario has at most one client-swarm part, and ${where}[${swarms[0]!.index}] is one` })),
  ];
}

/** The part that draws the workload's arrivals (topics or rounds), if any. */
export function drawnPartOf(workload: WorkloadSpec): TopicsPart | RoundsPart | undefined {
  return workload.parts.find((item): item is TopicsPart | RoundsPart => item.kind === 'topics' || item.kind === 'rounds');
}

/** The rounds part, if the workload arrives in rounds. */
export function roundsPartOf(workload: WorkloadSpec): RoundsPart | undefined {
  const drawn = drawnPartOf(workload);
  return drawn?.kind === 'rounds' ? drawn : undefined;
}

/** Every tasks part's tasks, in order, each with its part's defaults applied and its label. */
export function explicitTasksOf(workload: WorkloadSpec): ExplicitTask[] {
  return workload.parts.flatMap((item) => (item.kind === 'tasks' ? resolveTasks(item) : []));
}

/** The flood parts, in order. */
export function floodsOf(workload: WorkloadSpec): FloodPart[] {
  return workload.parts.filter((item): item is FloodPart => item.kind === 'flood');
}

/** The client swarm over the other parts, if the workload has one. */
export function clientSwarmOf(workload: WorkloadSpec): ClientSwarmSpec | undefined {
  const swarm = workload.parts.find((item): item is ClientSwarmPart => item.kind === 'client-swarm');
  return swarm === undefined ? undefined : swarmOf(swarm);
}

/** The priorities and tiers of requests drawn outside a part of their own (a client swarm's): the drawn part's, or 0 to 30 and standard. */
function drawnRanges(workload: WorkloadSpec): { priorities: [number, number]; tiers: Tier[] } {
  const drawn = drawnPartOf(workload);
  return { priorities: drawn?.priorities ?? [0, 30], tiers: drawn?.tiers ?? ['standard'] };
}

/** The workload's tenants: the drawn part's, in its order, or else every tenant its tasks and floods name, in order of first mention. */
export function workloadTenants(workload: WorkloadSpec): string[] {
  const drawn = drawnPartOf(workload);
  if (drawn !== undefined) return drawn.tenants;
  return [...new Set([...explicitTasksOf(workload).map((task) => task.tenant), ...floodsOf(workload).map((flood) => flood.tenant)])];
}

/** What a client swarm draws its new requests with (workloads/client-swarm.ts SwarmDrawing). */
export function swarmDrawing(workload: WorkloadSpec): SwarmDrawing {
  return { tenants: workloadTenants(workload), ...drawnRanges(workload), scripts: workload.scripts };
}

/** How the workload's longest script can run: the stub script's steps, or the most a drawn one takes. */
export function longestScript(scripts: ScriptDrawing): number {
  return scripts.script?.steps.length ?? scripts.steps[1];
}

/**
 * A size of the workload a shrink can lower (sim/check/shrink.ts): the topics of a topics part, the
 * rounds and tasks per round of a rounds part. Arrivals are drawn in order, so a smaller size draws a
 * prefix of what the larger one drew. `valid`: the workload still fits together at that size.
 */
export interface WorkloadKnob {
  name: string;
  get(workload: WorkloadSpec): number;
  set(workload: WorkloadSpec, value: number): void;
  valid(workload: WorkloadSpec): boolean;
}

export function workloadKnobs(workload: WorkloadSpec): WorkloadKnob[] {
  const index = workload.parts.findIndex((item) => item.kind === 'topics' || item.kind === 'rounds');
  const drawn = workload.parts[index];
  if (drawn?.kind === 'topics') {
    const topics = (w: WorkloadSpec) => w.parts[index] as TopicsPart;
    return [{ name: 'topics', get: (w) => topics(w).count, set: (w, value) => void (topics(w).count = value), valid: () => true }];
  }
  if (drawn?.kind !== 'rounds') return [];
  const rounds = (w: WorkloadSpec) => w.parts[index] as RoundsPart;
  // The poison tasks must fit in the rounds.
  const valid = (w: WorkloadSpec) => rounds(w).count * rounds(w).tasksPerRound >= rounds(w).poisonTasks;
  return [
    { name: 'rounds', get: (w) => rounds(w).count, set: (w, value) => void (rounds(w).count = value), valid },
    { name: 'tasks per round', get: (w) => rounds(w).tasksPerRound, set: (w, value) => void (rounds(w).tasksPerRound = value), valid },
  ];
}
