import { z } from 'zod';
import type { TaskEvent } from '../../src/queue/types.ts';
import { analyse } from '../checkers/timeline.ts';
import type { WorldResult } from '../world.ts';
import type { ExpectationKind } from './types.ts';
import { oneTaskOf } from './tasks.ts';

interface EventRef {
  /** The task's label. */
  task: string;
  /** An event type of the task's log: claimed, lease_expired, stop_confirmed, completed, superseded, ... */
  event: string;
  /** Which one of that type, from 1; default 1. */
  occurrence?: number;
}

interface EventOrder {
  kind: 'event-order';
  first: EventRef;
  then: EventRef;
}

const eventRef = z.strictObject({
  task: z.string().min(1),
  event: z.string().min(1),
  occurrence: z.number().int().min(1).optional(),
});

/**
 * Two task events both happened, in this commit order: e.g. "the waiting task is claimed only after
 * the uncertain one's stop was confirmed" (an uncertain task keeps its slot, Q10), or "v1 completed
 * after v2 was enqueued" (so its result is stale_input, Q2).
 */
export const eventOrder: ExpectationKind<EventOrder> = {
  kind: 'event-order',
  class: 'safety',
  description: 'an event of one named task was committed before an event of another (or the same) task; both happened',
  schema: z.strictObject({ kind: z.literal('event-order'), first: eventRef, then: eventRef }),
  check(spec, run) {
    const first = find(run, spec.first);
    const then = find(run, spec.then);
    const problems = [first, then].filter((found): found is string => typeof found === 'string');
    if (problems.length > 0) return problems;
    const a = first as TaskEvent;
    const b = then as TaskEvent;
    if (a.id < b.id) return [];
    return [`${describe(spec.first)} (event ${a.id} at +${a.at - run.startMs} ms) came after ${describe(spec.then)} (event ${b.id} at +${b.at - run.startMs} ms)`];
  },
};

function describe(ref: EventRef): string {
  return `'${ref.task}' ${ref.event} #${ref.occurrence ?? 1}`;
}

function find(run: WorldResult, ref: EventRef): TaskEvent | string {
  const id = oneTaskOf(run, ref.task);
  if (typeof id === 'string') return id;
  const events = (analyse(run).eventsByTask.get(id) ?? []).filter((event) => event.type === ref.event);
  return events[(ref.occurrence ?? 1) - 1] ?? `${describe(ref)} never happened (task ${id} has ${events.length} ${ref.event} event(s))`;
}
