import { InputError } from '../queue/errors.ts';
import { STATES } from '../queue/states.ts';
import type {
  AdmissionRecord,
  BudgetLevel,
  Checkpoint,
  DeadLetter,
  EffectView,
  ReservationView,
  Signals,
  TaskEvent,
  TaskState,
  TaskView,
  TenantPause,
  WorkQueue,
} from '../queue/types.ts';
import { OpsError } from './errors.ts';

/**
 * O1, O2: what an operator reads, as plain data, for both fronts: the CLI prints it as tables or JSON,
 * the dashboard serves it under /api/ and draws it. Every read goes through the queue's own API.
 *
 * `status` reads bounded views only (signals(), the uncertain tasks, pauses, budget levels, dead
 * letters): the live states are bounded by the queue's capacity, so it is cheap enough to poll every
 * few seconds; counting finished tasks is left to `tasks --state`, which reads them on request.
 */

/** One tenant's live work at the status's instant. */
export interface TenantRow {
  tenant: string;
  ready: number;
  running: number;
  uncertain: number;
  paused: boolean;
  /** Its oldest ready task and how long it has waited (A3, A5), when it has ready work. */
  oldestWaiting?: { taskId: number; waitedMs: number };
}

export interface UncertainRow {
  taskId: number;
  tenant: string;
  topic: string;
  /** The holder whose lease lapsed: an uncertain task keeps its worker and lease (Q10). */
  workerId: string;
  generation: number;
  attempts: number;
  /** Since its lease lapsed (Q10). */
  uncertainForMs: number;
  cancelRequested: boolean;
}

export interface StatusView {
  at: number;
  db: string;
  totals: { ready: number; running: number; uncertain: number; deadLetters: number; pausedTenants: number };
  /** `live` is the queue's kept count; the limits are the defaults of the process reading (the workers' config is not stored). */
  limits: { capacity: number; globalLimit: number; perTenantLimit: number; live: number };
  tenants: TenantRow[];
  running: Signals['leases'];
  uncertain: UncertainRow[];
  paused: TenantPause[];
  budgets: BudgetLevel[];
  /** Alerts a person should act on, worst first, each one sentence. */
  alerts: { level: 'critical' | 'warning'; text: string }[];
  /** The newest recorded admission decisions, newest first (A2: each with its reason). */
  recentDecisions: AdmissionRecord[];
  signals: Signals;
}

/** How many recent admission decisions the status carries. */
export const RECENT_DECISIONS = 20;

export async function readStatus(queue: WorkQueue, db: string): Promise<StatusView> {
  const signals = await queue.signals();
  const at = signals.at;
  const [uncertainTasks, paused, budgets, deadLetters, decisions, live] = await Promise.all([
    queue.tasksInState('uncertain'),
    queue.pausedTenants(),
    queue.budgetLevels(),
    queue.deadLetters(),
    queue.admissionDecisions(),
    queue.liveCount(),
  ]);
  const tenants = new Map<string, TenantRow>();
  const row = (tenant: string): TenantRow => {
    let found = tenants.get(tenant);
    if (found === undefined) tenants.set(tenant, (found = { tenant, ready: 0, running: 0, uncertain: 0, paused: false }));
    return found;
  };
  for (const { tenant, n } of signals.depth) row(tenant).ready += n;
  for (const lease of signals.leases) row(lease.tenant).running++;
  for (const task of uncertainTasks) row(task.tenant).uncertain++;
  for (const pause of paused) row(pause.tenant).paused = true;
  for (const oldest of signals.oldestWaiting) row(oldest.tenant).oldestWaiting = { taskId: oldest.taskId, waitedMs: oldest.waitedMs };
  const uncertain = uncertainTasks.map((task) => ({
    taskId: task.id,
    tenant: task.tenant,
    topic: task.topic,
    // An uncertain task is one whose lease lapsed (Q10): it keeps that lease's worker and end.
    workerId: task.workerId!,
    generation: task.generation,
    attempts: task.attempts,
    uncertainForMs: Math.max(0, at - task.leaseUntil!),
    cancelRequested: task.cancelRequested,
  }));
  const { capacity, globalLimit, perTenantLimit } = queue.config;
  const totals = {
    ready: signals.depth.reduce((sum, { n }) => sum + n, 0),
    running: signals.leases.length,
    uncertain: signals.awaitingReconciliation,
    deadLetters: deadLetters.length,
    pausedTenants: paused.length,
  };
  return {
    at,
    db,
    totals,
    limits: { capacity, globalLimit, perTenantLimit, live },
    // One row per tenant (the map's keys), so no two compare equal.
    tenants: [...tenants.values()].sort((a, b) => (a.tenant < b.tenant ? -1 : 1)),
    running: signals.leases,
    uncertain,
    paused,
    budgets,
    alerts: alertsOf(signals, totals),
    recentDecisions: decisions.slice(-RECENT_DECISIONS).reverse(),
    signals,
  };
}

function alertsOf(signals: Signals, totals: StatusView['totals']): StatusView['alerts'] {
  const alerts: StatusView['alerts'] = [];
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (signals.alerts.stuckWhileCapacityNormal) alerts.push({ level: 'critical', text: 'stuckWhileCapacityNormal: a ready task that could run has waited past stuckAfterMs while slots are free' });
  if (totals.uncertain > 0) alerts.push({ level: 'warning', text: `${plural(totals.uncertain, 'uncertain task')} awaiting confirmation: confirm-stopped once you know the worker is gone` });
  if (totals.deadLetters > 0) alerts.push({ level: 'warning', text: `${plural(totals.deadLetters, 'dead letter')} to look at` });
  if (totals.pausedTenants > 0) alerts.push({ level: 'warning', text: `${plural(totals.pausedTenants, 'paused tenant')}` });
  return alerts;
}

export interface TaskFilter {
  tenant?: string;
  state?: string;
  topic?: string;
  limit?: number;
}

/** The default and largest page of `tasks`. */
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 10_000;

/** O1: tasks by tenant, state and topic, newest first; `total` counts every match, `tasks` the first `limit`. */
export async function readTasks(queue: WorkQueue, filter: TaskFilter): Promise<{ total: number; tasks: TaskView[] }> {
  const state = filter.state === undefined ? undefined : requireState(filter.state);
  const limit = filter.limit ?? DEFAULT_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new OpsError('invalid_input', `limit expects an integer from 1 to ${MAX_LIMIT}, got ${String(limit)}`);
  for (const field of ['tenant', 'topic'] as const) {
    if (filter[field] !== undefined && (typeof filter[field] !== 'string' || filter[field] === '')) throw new OpsError('invalid_input', `${field} expects a non-empty string`);
  }
  const source =
    state !== undefined ? await queue.tasksInState(state) : filter.tenant !== undefined ? await queue.listForTenant(filter.tenant) : (await queue.snapshot()).tasks;
  const matching = source.filter(
    (task) => (filter.tenant === undefined || task.tenant === filter.tenant) && (filter.topic === undefined || task.topic === filter.topic) && (state === undefined || task.state === state),
  );
  matching.sort((a, b) => b.id - a.id);
  return { total: matching.length, tasks: matching.slice(0, limit) };
}

export function requireState(state: string): TaskState {
  if (!(STATES as readonly string[]).includes(state)) throw new OpsError('invalid_input', `state expects one of ${STATES.join(', ')}, got ${JSON.stringify(state)}`);
  return state as TaskState;
}

/** A task id from a command line or a URL: a positive integer written in decimal, nothing else. */
export function parseTaskId(text: unknown): number {
  const id = typeof text === 'number' ? text : typeof text === 'string' && /^[1-9]\d{0,15}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(id) || id < 1) throw new OpsError('invalid_input', `a task id is a positive integer, got ${JSON.stringify(text)}`);
  return id;
}

export interface TaskDetail {
  at: number;
  task: TaskView;
  events: TaskEvent[];
  lastCheckpoint: Checkpoint | undefined;
  effects: EffectView[];
  reservations: ReservationView[];
  admissionDecisions: AdmissionRecord[];
  deadLetter: DeadLetter | undefined;
}

/** O1: one task with everything recorded about it. */
export async function readTask(queue: WorkQueue, idText: unknown): Promise<TaskDetail> {
  const id = parseTaskId(idText);
  const task = await queue.get(id);
  if (task === undefined) throw new OpsError('not_found', `no task ${id}`);
  const [events, lastCheckpoint, effects, reservations, decisions, deadLetters, signals] = await Promise.all([
    queue.events(id),
    queue.lastCheckpoint(id),
    queue.effects(),
    queue.reservations(),
    queue.admissionDecisions(),
    queue.deadLetters(),
    queue.signals(),
  ]);
  return {
    at: signals.at,
    task,
    events,
    lastCheckpoint,
    effects: effects.filter((effect) => effect.taskId === id),
    reservations: reservations.filter((reservation) => reservation.taskId === id),
    admissionDecisions: decisions.filter((decision) => decision.taskId === id),
    deadLetter: deadLetters.find((letter) => letter.taskId === id),
  };
}

/** Turns a queue's InputError into the operator's typed one (nothing was written). */
export function inputErrorOf(error: unknown): unknown {
  return error instanceof InputError ? new OpsError('invalid_input', error.message, { cause: error }) : error;
}
