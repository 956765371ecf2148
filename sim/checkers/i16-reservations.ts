import type { ReservationView, TaskState } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { SPEC_OCCUPYING_STATES } from './spec-rules.ts';
import { analyse, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

const OCCUPYING = new Set<TaskState>(SPEC_OCCUPYING_STATES);

function unitsOf(value: unknown): [string, number][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value as Record<string, unknown>).filter((entry): entry is [string, number] => typeof entry[1] === 'number' && Number.isFinite(entry[1]));
}

const key = (taskId: number, budget: string, generation?: number) => (generation === undefined ? `${taskId}\u0000${budget}` : `${taskId}\u0000${generation}\u0000${budget}`);
const describe = (row: Pick<ReservationView, 'taskId' | 'generation' | 'budget'>) => `task ${row.taskId} g${row.generation} ${row.budget}`;

/**
 * I16: reservations balance (A1), over the reservations the world exported (rules skip without them).
 *
 * Rules:
 * - each (task, generation, budget) has one reservation row;
 * - a released row balances: reserved = consumed + released, with 0 <= consumed <= reserved; a
 *   concurrency budget (a semaphore) is never consumed: its release gives every unit back;
 * - what was reserved is what the log granted that attempt: the `reserved` of its claimed and
 *   budget_reserved events plus the `overdraft` of its checkpoints;
 * - each is released once: the events that name a release of (task, budget) are as many as its
 *   released rows, and their units add up to the rows' released units (a second release of one
 *   reservation shows as an event naming more than the rows kept);
 * - a task that no longer holds a slot (not running, not uncertain) holds no unreleased reservation;
 *   a running or uncertain one holds only its current generation's (an uncertain task keeps its units).
 */
export const i16Reservations: Checker = {
  invariant: 'I16',
  kind: 'safety',
  description: 'reservations balance: reserved = consumed + released per run and budget; each released once; none held by a task that holds no slot',
  check(world: WorldResult) {
    const out = new ViolationList('I16', 'safety');
    const rows = world.reservations;
    if (rows === undefined) return out.list;
    const analysis = analyse(world);
    const seen = new Map<string, number>();
    for (const row of rows) {
      const k = key(row.taskId, row.budget, row.generation);
      seen.set(k, (seen.get(k) ?? 0) + 1);
      if (seen.get(k) === 2) out.add('unique', `${describe(row)} has more than one reservation row`, { taskId: row.taskId });
      if (row.consumed < 0 || row.consumed > row.reserved) out.add('balance', `${describe(row)} consumed ${row.consumed} of a reservation of ${row.reserved}`, { taskId: row.taskId });
      if (row.released !== null && (row.released < 0 || row.reserved !== row.consumed + row.released)) {
        out.add('balance', `${describe(row)} reserved ${row.reserved} but consumed ${row.consumed} + released ${row.released} = ${row.consumed + row.released}`, { taskId: row.taskId });
      }
      const spec = Object.hasOwn(analysis.config.budgets, row.budget) ? analysis.config.budgets[row.budget] : undefined;
      if (spec?.kind === 'concurrency' && row.released !== null && (row.released !== row.reserved || row.consumed !== 0)) {
        out.add('semaphore', `${describe(row)} is a concurrency budget: all ${row.reserved} units come back when the slot is freed, but ${row.released} were released and ${row.consumed} consumed`, { taskId: row.taskId });
      }
      if (row.released === null && row.releasedAt !== null) out.add('balance', `${describe(row)} has a release time but no released units`, { taskId: row.taskId });
    }
    // What the log granted each attempt, and what it says was released per (task, budget).
    const granted = new Map<string, number>();
    const releasedByEvents = new Map<string, { count: number; units: number; events: number[] }>();
    for (const event of world.events) {
      const generation = event.generation ?? (typeof event.data.generation === 'number' ? event.data.generation : undefined);
      const grants = event.type === 'claimed' || event.type === 'budget_reserved' ? unitsOf(event.data.reserved) : event.type === 'checkpoint' ? unitsOf(event.data.overdraft) : [];
      if (generation !== undefined) for (const [budget, units] of grants) granted.set(key(event.taskId, budget, generation), (granted.get(key(event.taskId, budget, generation)) ?? 0) + units);
      for (const [budget, units] of unitsOf(event.data.released)) {
        const k = key(event.taskId, budget);
        const entry = releasedByEvents.get(k) ?? { count: 0, units: 0, events: [] };
        entry.count += 1;
        entry.units += units;
        entry.events.push(event.id);
        releasedByEvents.set(k, entry);
      }
    }
    const releasedRows = new Map<string, { count: number; units: number }>();
    for (const row of rows) {
      const g = granted.get(key(row.taskId, row.budget, row.generation)) ?? 0;
      if (g !== row.reserved) out.add('granted', `${describe(row)} reserved ${row.reserved}, the log granted that attempt ${g}`, { taskId: row.taskId });
      if (row.released === null) continue;
      const k = key(row.taskId, row.budget);
      const entry = releasedRows.get(k) ?? { count: 0, units: 0 };
      entry.count += 1;
      entry.units += row.released;
      releasedRows.set(k, entry);
    }
    for (const [k, g] of granted) {
      if (!seen.has(k)) {
        const [taskId, generation, budget] = k.split('\u0000');
        out.add('granted', `the log granted task ${taskId} g${generation} ${g} of ${budget} but no reservation row records it`, { taskId: Number(taskId) });
      }
    }
    for (const [k, entry] of releasedByEvents) {
      const recorded = releasedRows.get(k) ?? { count: 0, units: 0 };
      const [taskId, budget] = k.split('\u0000');
      if (entry.count !== recorded.count || entry.units !== recorded.units) {
        out.add('once', `task ${taskId} ${budget}: events ${entry.events.join(', ')} release ${entry.units} units in ${entry.count} release(s), the reservations record ${recorded.units} released in ${recorded.count}`, { taskId: Number(taskId) });
      }
    }
    for (const [k, recorded] of releasedRows) {
      if (releasedByEvents.has(k)) continue;
      const [taskId, budget] = k.split('\u0000');
      out.add('once', `task ${taskId} ${budget}: the reservations record ${recorded.count} release(s) that no event names`, { taskId: Number(taskId) });
    }
    for (const row of rows) {
      if (row.released !== null) continue;
      const task = analysis.tasks.get(row.taskId);
      if (task === undefined) {
        out.add('held', `${describe(row)} is held by a task the database does not have`, { taskId: row.taskId });
      } else if (!OCCUPYING.has(task.state)) {
        out.add('held', `${describe(row)} is still held (${row.reserved} units) but the task is ${task.state}, which holds no slot`, { taskId: row.taskId });
      } else if (row.generation !== task.generation) {
        out.add('held', `${describe(row)} is still held but the task is ${task.state} at generation ${task.generation}`, { taskId: row.taskId });
      }
    }
    return out.list;
  },
};

/** I16, liveness: after the liveness phase of a drained run nothing is still reserved. */
export const i16Released: Checker = {
  invariant: 'I16',
  kind: 'liveness',
  description: 'after the liveness phase nothing is still reserved',
  check(world: WorldResult) {
    const out = new ViolationList('I16', 'liveness');
    // A run that did not drain is I11's to report; what it still holds says nothing more.
    if (!world.drained || world.reservations === undefined) return out.list;
    for (const row of world.reservations) {
      if (row.released === null) out.add('drained', `${describe(row)} still holds ${row.reserved} units after the liveness phase`, { taskId: row.taskId });
    }
    return out.list;
  },
};
