/**
 * Admission (A2): table `tenant_pauses`, one row per paused tenant; a task's `deferred` reason, set
 * while it waits ready for admission; and table `admission_decisions`, one row per decision, each
 * counted in its signal (A5) in the same transaction.
 */
import type { AdmissionRow, PauseRow } from '../store.ts';
import { NOTHING, type Operations } from './runner.ts';
import { signalBump } from './signals.ts';
import { read, write } from './statement.ts';

export const tenantPauseList = read('tenantPauseList').rows<PauseRow>('SELECT tenant, reason, at FROM tenant_pauses ORDER BY tenant');

/** Pauses a tenant unless it is paused already (its first pause stands). */
export const tenantPauseInsert = write('tenantPauseInsert', ['tenant', 'reason', 'at']).changes(
  'INSERT INTO tenant_pauses (tenant, reason, at) VALUES (:tenant, :reason, :at) ON CONFLICT (tenant) DO NOTHING',
);

export const tenantPauseDelete = write('tenantPauseDelete', ['tenant']).changes('DELETE FROM tenant_pauses WHERE tenant = :tenant');

export const taskDeferredSet = write('taskDeferredSet', ['deferred', 'task_id']).changes('UPDATE tasks SET deferred = :deferred WHERE id = :task_id');

/** Not a state write: the row stays ready (IN, not =, so no reader mistakes it for one). */
export const taskDefer = write('taskDefer', ['deferred', 'task_id']).pluck<number>(
  `UPDATE tasks SET deferred = :deferred, event_seq = event_seq + 1 WHERE id = :task_id AND state IN ('ready') RETURNING event_seq`,
);

/** A decision; its id is the next one, as SQLite's rowid takes it (PostgreSQL's table has no rowid). */
export const admissionInsert = write('admissionInsert', ['at', 'action', 'reason', 'tenant', 'task_id', 'retry_at', 'budget']).changes(
  `INSERT INTO admission_decisions (id, at, action, reason, tenant, task_id, retry_at, budget)
   VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM admission_decisions), :at, :action, :reason, :tenant, :task_id, :retry_at, :budget)`,
);

export const admissionList = read('admissionList').rows<AdmissionRow>('SELECT at, action, reason, tenant, task_id, retry_at, budget FROM admission_decisions ORDER BY id');

export const admissionOperations = {
  tenantPauseList() {
    return this.run(tenantPauseList, {});
  },
  tenantPause(tenant, reason, at) {
    return this.run(tenantPauseInsert, { tenant, reason, at }, (changes) => changes === 1);
  },
  tenantResume(tenant) {
    return this.run(tenantPauseDelete, { tenant }, (changes) => changes === 1);
  },
  taskDeferredSet(id, reason) {
    this.send(taskDeferredSet, { deferred: reason, task_id: id });
    return NOTHING;
  },
  taskDefer(id, reason) {
    return this.run(taskDefer, { deferred: reason, task_id: id });
  },
  admissionInsert(row) {
    const { at, action, reason, tenant, task_id, retry_at, budget } = row;
    this.send(admissionInsert, { at, action, reason, tenant, task_id, retry_at, budget });
    this.send(signalBump, { name: `decision:${action}:${reason}`, delta: 1 });
    return NOTHING;
  },
  admissionList() {
    return this.run(admissionList, {});
  },
} satisfies Operations<'tenantPauseList' | 'tenantPause' | 'tenantResume' | 'taskDeferredSet' | 'taskDefer' | 'admissionInsert' | 'admissionList'>;
