/**
 * What the model-based test compares: each real answer projected onto the fields the model predicts,
 * and every known task as `get()` and `events()` show it. Projections never carry `undefined` fields,
 * so a deep equality is exact.
 */
import { isDeepStrictEqual } from 'node:util';
import type {
  CancelResult,
  CheckpointResult,
  ClaimResult,
  CompleteResult,
  ConfirmStoppedResult,
  EnqueueResult,
  FailResult,
  HeartbeatResult,
  AppendEventResult,
  WorkQueue,
} from '../../src/index.ts';
import type { ReferenceQueue, ReferenceTask } from './reference-queue.ts';
import type { RealQueue } from './universe.ts';

const failure = (error: string) => ({ ok: false, error });

export const observe = {
  enqueue(r: EnqueueResult) {
    if (r.ok) return { ok: true, taskId: r.taskId, status: r.status };
    return r.error === 'idempotency_conflict' ? { ok: false, error: r.error, taskId: r.taskId } : failure(r.error);
  },
  claim(r: ClaimResult) {
    if (!r.ok) return { ok: false, reason: r.reason };
    const { id, tenant, topic, version, priority, generation, attempt, leaseUntil, cancelRequested } = r.task;
    return { ok: true, id, tenant, topic, version, priority, generation, attempt, leaseUntil, cancelRequested };
  },
  heartbeat(r: HeartbeatResult) {
    return r.ok ? { ok: true, leaseUntil: r.leaseUntil, cancelRequested: r.cancelRequested } : failure(r.error);
  },
  complete(r: CompleteResult) {
    return r.ok ? { ok: true, outcome: r.outcome } : failure(r.error);
  },
  fail(r: FailResult) {
    if (!r.ok) return failure(r.error);
    return r.next === 'retry' ? { ok: true, next: r.next, notBefore: r.notBefore } : { ok: true, next: r.next };
  },
  acknowledgeCancel(r: Awaited<ReturnType<WorkQueue['acknowledgeCancel']>>) {
    return r.ok ? { ok: true } : failure(r.error);
  },
  appendEvent(r: AppendEventResult) {
    return r.ok ? { ok: true, seq: r.seq } : failure(r.error);
  },
  checkpoint(r: CheckpointResult) {
    return r.ok ? { ok: true, seq: r.seq, eventSeq: r.eventSeq } : failure(r.error);
  },
  confirmStopped(r: ConfirmStoppedResult) {
    return r.ok ? { ok: true, next: r.next } : failure(r.error);
  },
  cancel(r: CancelResult) {
    if (r.ok) return { ok: true, state: r.state };
    return r.error === 'already_terminal' ? { ok: false, error: r.error, state: r.state } : failure(r.error);
  },
};

/** Throws with both sides and the calls that led here when the queue and the model disagree. */
export function expectSame(actual: unknown, expected: unknown, what: string, real: RealQueue): void {
  if (isDeepStrictEqual(actual, expected)) return;
  throw new Error(
    [
      `${what}: the queue and the reference model disagree`,
      `  queue: ${JSON.stringify(actual)}`,
      `  model: ${JSON.stringify(expected)}`,
      '  calls in this run (with the model answers):',
      ...real.trace.map((line) => `    ${line}`),
    ].join('\n'),
  );
}

function modelView(task: ReferenceTask) {
  return {
    id: task.id,
    tenant: task.tenant,
    topic: task.topic,
    version: task.version,
    priority: task.priority,
    state: task.state,
    generation: task.generation,
    attempts: task.attempts,
    cancelRequested: task.cancelRequested,
    enqueuedAt: task.enqueuedAt,
    // When a task may next be claimed matters only while it waits (Q16 backoff).
    ...(task.state === 'ready' ? { notBefore: task.notBefore } : {}),
    ...(task.deadline === undefined ? {} : { deadline: task.deadline }),
    // The holder and its lease matter only while running (Q7, Q9).
    ...(task.state === 'running' ? { workerId: task.workerId, leaseUntil: task.leaseUntil } : {}),
    ...(task.state === 'done' || task.state === 'cancelled' ? { outcome: task.outcome } : {}),
    events: task.events,
  };
}

async function realView(real: RealQueue, id: number) {
  const view = await real.queue.get(id);
  if (view === undefined) return undefined;
  const events = await real.queue.events(id);
  // Q15: each task's sequences run 1, 2, 3, ... with no gap and no repeat.
  events.forEach((event, index) => {
    if (event.seq !== index + 1) throw new Error(`task ${id}: event ${index} has seq ${event.seq}, expected ${index + 1}\n${real.trace.join('\n')}`);
  });
  return {
    id: view.id,
    tenant: view.tenant,
    topic: view.topic,
    version: view.version,
    priority: view.priority,
    state: view.state,
    generation: view.generation,
    attempts: view.attempts,
    cancelRequested: view.cancelRequested,
    enqueuedAt: view.enqueuedAt,
    ...(view.state === 'ready' ? { notBefore: view.notBefore } : {}),
    ...(view.deadline === undefined ? {} : { deadline: view.deadline }),
    ...(view.state === 'running' ? { workerId: view.workerId, leaseUntil: view.leaseUntil } : {}),
    ...(view.state === 'done' || view.state === 'cancelled' ? { outcome: view.outcome } : {}),
    events: events.length,
  };
}

/**
 * After every command: each task the model knows looks the same through get() and events(), no other
 * task exists, and the same refusals were recorded.
 */
export async function expectSameState(model: ReferenceQueue, real: RealQueue): Promise<void> {
  for (const task of model.tasks) expectSame(await realView(real, task.id), modelView(task), `task ${task.id}`, real);
  const extra = model.tasks.length + 1;
  expectSame((await real.queue.get(extra)) === undefined ? 'absent' : 'present', 'absent', `task ${extra} (unknown to the model)`, real);
  expectSame(await real.queue.rejections(), model.rejections, 'rejections()', real);
}

/** At the end of a run: the admin and tenant views agree with the model too (Q19). */
export async function expectSameViews(model: ReferenceQueue, real: RealQueue): Promise<void> {
  const snapshot = await real.queue.snapshot();
  const counts = { ready: 0, running: 0, uncertain: 0, done: 0, failed: 0, superseded: 0, cancelled: 0, expired: 0 };
  for (const task of model.tasks) counts[task.state]++;
  expectSame(snapshot.countsByState, counts, 'snapshot().countsByState', real);
  expectSame(snapshot.live, model.liveCount(), 'snapshot().live', real);
  expectSame(snapshot.occupied.global, counts.running + counts.uncertain, 'snapshot().occupied.global', real);
  for (const tenant of new Set(model.tasks.map((task) => task.tenant))) {
    const ids = model.tasks.filter((task) => task.tenant === tenant).map((task) => task.id);
    expectSame((await real.queue.listForTenant(tenant)).map((view) => view.id), ids, `listForTenant(${tenant})`, real);
  }
}
