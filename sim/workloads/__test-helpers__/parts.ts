import type { ExplicitTask, ScriptDrawing, TasksPart, TopicsPart, WorkloadPart, WorkloadSpec } from '../../scenario.ts';
import { resolveTasks } from '../tasks.ts';

/** A task as a tasks part lists it. */
export type TaskInput = TasksPart['tasks'][number];

/** A copy of `workload` whose topics part draws `count` topics; 0 leaves the part out. */
export function withTopics(workload: WorkloadSpec, count: number): WorkloadSpec {
  if (!workload.parts.some((item) => item.kind === 'topics')) throw new Error('the workload has no topics part');
  const parts = workload.parts.flatMap((item): WorkloadPart[] => (item.kind !== 'topics' ? [structuredClone(item)] : count === 0 ? [] : [{ ...structuredClone(item), count }]));
  return { parts, scripts: structuredClone(workload.scripts) };
}

/** A copy of `workload` with a tasks part of `tasks` after its parts. */
export function withTasks(workload: WorkloadSpec, tasks: TaskInput[]): WorkloadSpec {
  return { parts: [...structuredClone(workload.parts), { kind: 'tasks', tasks: structuredClone(tasks) }], scripts: structuredClone(workload.scripts) };
}

/** A copy of `workload` without its parts of `kind`. */
export function without(workload: WorkloadSpec, kind: WorkloadSpec['parts'][number]['kind']): WorkloadSpec {
  return { parts: structuredClone(workload.parts.filter((item) => item.kind !== kind)), scripts: structuredClone(workload.scripts) };
}

/** `workload`'s topics part alone (its other parts left out) with `topics` over it, and its script drawing with `scripts` over it. */
export function topicsOnly(workload: WorkloadSpec, topics: Partial<Omit<TopicsPart, 'kind'>>, scripts: Partial<ScriptDrawing> = {}): WorkloadSpec {
  const part = workload.parts.find((item): item is TopicsPart => item.kind === 'topics');
  if (part === undefined) throw new Error('the workload has no topics part');
  return { parts: [{ ...structuredClone(part), ...structuredClone(topics) }], scripts: { ...structuredClone(workload.scripts), ...structuredClone(scripts) } };
}

/** A copy of `workload` with `fields` over its topics part, its other parts as they are. */
export function editTopics(workload: WorkloadSpec, fields: Partial<Omit<TopicsPart, 'kind'>>): WorkloadSpec {
  if (!workload.parts.some((item) => item.kind === 'topics')) throw new Error('the workload has no topics part');
  return { parts: workload.parts.map((item) => (item.kind === 'topics' ? { ...structuredClone(item), ...structuredClone(fields) } : structuredClone(item))), scripts: structuredClone(workload.scripts) };
}

/** A copy of `workload` whose tasks parts list their tasks resolved (defaults applied, labels given), each passed through `change`. */
export function mapTasks(workload: WorkloadSpec, change: (task: ExplicitTask) => ExplicitTask): WorkloadSpec {
  return { parts: workload.parts.map((item) => (item.kind === 'tasks' ? { kind: 'tasks', tasks: resolveTasks(structuredClone(item)).map(change) } : structuredClone(item))), scripts: structuredClone(workload.scripts) };
}
