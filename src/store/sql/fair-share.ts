/**
 * Fair share (A3): table `tenant_service`, the service each tenant has had, and each task's own charge
 * (`tasks.service_charged`), with the liveness read that decides whether a tenant still competes.
 */
import { OCCUPYING_SQL } from '../../queue/states.ts';
import { NOTHING, type Operations } from './runner.ts';
import { read, write } from './statement.ts';

const OCCUPYING = OCCUPYING_SQL;

export const serviceGet = read('serviceGet', ['tenant']).pluck<number>('SELECT service FROM tenant_service WHERE tenant = :tenant');

/** Adds to a tenant's service, created at 0. */
export const serviceAdd = write('serviceAdd', ['tenant', 'delta']).changes(
  `INSERT INTO tenant_service (tenant, service) VALUES (:tenant, :delta)
   ON CONFLICT (tenant) DO UPDATE SET service = tenant_service.service + excluded.service`,
);

export const serviceList = read('serviceList').rows<{ tenant: string; service: number }>('SELECT tenant, service FROM tenant_service ORDER BY tenant');

export const taskServiceCharged = read('taskServiceCharged', ['task_id']).pluck<number>('SELECT service_charged FROM tasks WHERE id = :task_id');

export const taskAddServiceCharged = write('taskAddServiceCharged', ['delta', 'task_id']).changes(
  'UPDATE tasks SET service_charged = service_charged + :delta WHERE id = :task_id',
);

/** Whether the tenant has a ready, running or uncertain task other than one (partial indexes only): 1 or 0. */
export const tenantHasLive = read('tenantHasLive', ['tenant', 'except_id']).pluck<number>(
  `SELECT CAST(EXISTS (SELECT 1 FROM tasks WHERE tenant = :tenant AND state = 'ready' AND id <> :except_id)
            OR EXISTS (SELECT 1 FROM tasks WHERE tenant = :tenant AND ${OCCUPYING} AND id <> :except_id) AS INTEGER) AS v`,
);

export const fairShareOperations = {
  serviceGet(tenant) {
    return this.run(serviceGet, { tenant }, (service) => service ?? 0);
  },
  serviceAdd(tenant, delta) {
    this.send(serviceAdd, { tenant, delta });
    return NOTHING;
  },
  taskServiceCharged(id) {
    return this.run(taskServiceCharged, { task_id: id }, (charged) => charged ?? 0);
  },
  taskAddServiceCharged(id, delta) {
    this.send(taskAddServiceCharged, { delta, task_id: id });
    return NOTHING;
  },
  tenantHasLive(tenant, exceptId) {
    return this.run(tenantHasLive, { tenant, except_id: exceptId }, (live) => live === 1);
  },
  serviceList() {
    return this.run(serviceList, {});
  },
} satisfies Operations<'serviceGet' | 'serviceAdd' | 'taskServiceCharged' | 'taskAddServiceCharged' | 'tenantHasLive' | 'serviceList'>;
