import { EDGES, STATES } from '../../src/queue/states.ts';
import type { AdmissionRecord, Rejection, TaskEvent } from '../../src/queue/types.ts';
import { bump } from './stats.ts';
import { own } from '../own.ts';

/**
 * Issue 16 item 6: admission decisions by reason, and the state-transition table seed 004's drills ask
 * for ("the expected result is a state-transition table", not "the worker eventually came back"): every
 * (from, to) change in the event log with the event that carried it, against the edges of the state
 * machine (src/queue/states.ts, read only to list the possible edges).
 */

export const NEW_TASK = '(enqueue)';
/** RUN is not a stored admission row: every claim that granted is one. */
export const RUN_REASON = '(claimed)';
const SEP = '\u001f';

export function admissionKey(action: string, reason: string, tenant: string): string {
  return `${action}${SEP}${reason}${SEP}${tenant}`;
}

export function splitAdmissionKey(key: string): { action: string; reason: string; tenant: string } {
  const [action = '', reason = '', tenant = ''] = key.split(SEP);
  return { action, reason, tenant };
}

export interface AdmissionInput {
  events: readonly TaskEvent[];
  tasks: readonly { id: number; tenant: string }[];
  rejections: readonly Rejection[];
  /** The queue's admission_decisions rows, when the world exported them; else the events say. */
  admissionDecisions?: readonly AdmissionRecord[] | undefined;
}

/**
 * Counts of `action, reason, tenant`: RUN from the claims; DEFER, REJECT, PAUSE and RESUME from the
 * admission decisions when there are any, else DEFER from the `deferred` events and the enqueued events
 * whose data.admission is a DEFER, and REJECT from the rejections.
 */
export function admissionCounts(input: AdmissionInput): Record<string, number> {
  const tenantOf = new Map(input.tasks.map((task) => [task.id, task.tenant]));
  const counts: Record<string, number> = {};
  for (const event of input.events) if (event.type === 'claimed') bump(counts, admissionKey('RUN', RUN_REASON, tenantOf.get(event.taskId) ?? '?'));
  if (input.admissionDecisions !== undefined) {
    for (const row of input.admissionDecisions) bump(counts, admissionKey(row.action, row.reason, row.tenant));
    return counts;
  }
  for (const event of input.events) {
    const tenant = tenantOf.get(event.taskId) ?? '?';
    if (event.type === 'deferred' && typeof event.data?.reason === 'string') bump(counts, admissionKey('DEFER', event.data.reason, tenant));
    const admission = event.type === 'enqueued' ? (event.data?.admission as { action?: unknown; reason?: unknown } | undefined) : undefined;
    if (admission?.action === 'DEFER' && typeof admission.reason === 'string') bump(counts, admissionKey('DEFER', admission.reason, tenant));
  }
  for (const rejection of input.rejections) bump(counts, admissionKey('REJECT', rejection.reason, rejection.tenant));
  return counts;
}

export interface AdmissionRow {
  action: string;
  reason: string;
  count: number;
  /** Count per tenant, tenants in name order. */
  byTenant: Record<string, number>;
}

const ACTION_ORDER = ['RUN', 'DEFER', 'REJECT', 'PAUSE', 'RESUME'];

/** One row per (action, reason): action order, then count, then reason. */
export function admissionRows(counts: Readonly<Record<string, number>>): AdmissionRow[] {
  const rows = new Map<string, AdmissionRow>();
  for (const [key, count] of Object.entries(counts)) {
    const { action, reason, tenant } = splitAdmissionKey(key);
    const id = `${action}${SEP}${reason}`;
    let row = rows.get(id);
    if (row === undefined) rows.set(id, (row = { action, reason, count: 0, byTenant: Object.create(null) as Record<string, number> }));
    row.count += count;
    row.byTenant[tenant] = (own(row.byTenant, tenant) ?? 0) + count;
  }
  const actionIndex = (action: string) => (ACTION_ORDER.includes(action) ? ACTION_ORDER.indexOf(action) : ACTION_ORDER.length);
  for (const row of rows.values()) row.byTenant = Object.fromEntries(Object.entries(row.byTenant).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return [...rows.values()].sort((a, b) => actionIndex(a.action) - actionIndex(b.action) || b.count - a.count || (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0));
}

/**
 * `from>to>type` -> count: every state change in the event log, replayed per task in commit order. An
 * event carries `to` when it changes the state; `from` is the event's own when it names one, else the
 * replayed state (a task's first event comes from `(enqueue)`).
 */
export function edgeCounts(events: readonly TaskEvent[]): Record<string, number> {
  const state = new Map<number, string>();
  const counts: Record<string, number> = {};
  for (const event of [...events].sort((a, b) => a.id - b.id)) {
    const to = event.data?.to;
    if (typeof to !== 'string') continue;
    const from = typeof event.data.from === 'string' ? event.data.from : (state.get(event.taskId) ?? NEW_TASK);
    bump(counts, `${from}>${to}>${event.type}`);
    state.set(event.taskId, to);
  }
  return counts;
}

export interface EdgeRow {
  from: string;
  to: string;
  /** The event type that carried the change (an edge's `records`). */
  event: string;
  /** The queue operations whose edge records this (from, to, event); empty when none does. */
  operations: string[];
  count: number;
}

const STATE_ORDER: readonly string[] = [NEW_TASK, ...STATES];

/**
 * The observed rows and every edge of the state machine never observed (count 0), sorted by from state,
 * then count (most first), then to state and event. A row with no operation is a change no edge allows.
 */
export function edgeRows(counts: Readonly<Record<string, number>>): EdgeRow[] {
  const rows = new Map<string, EdgeRow>();
  for (const edge of EDGES) {
    const from = edge.from ?? NEW_TASK;
    const key = `${from}>${edge.to}>${edge.records}`;
    const row = rows.get(key);
    if (row === undefined) rows.set(key, { from, to: edge.to, event: edge.records, operations: [edge.event], count: 0 });
    else if (!row.operations.includes(edge.event)) row.operations.push(edge.event);
  }
  for (const [key, count] of Object.entries(counts)) {
    const [from = '', to = '', event = ''] = key.split('>');
    const row = rows.get(key);
    if (row !== undefined) row.count += count;
    else rows.set(key, { from, to, event, operations: [], count });
  }
  const order = (state: string) => {
    const index = STATE_ORDER.indexOf(state);
    return index < 0 ? STATE_ORDER.length : index;
  };
  const text = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...rows.values()].sort((a, b) => order(a.from) - order(b.from) || text(a.from, b.from) || b.count - a.count || order(a.to) - order(b.to) || text(a.to, b.to) || text(a.event, b.event));
}
