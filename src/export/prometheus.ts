import type { Gauge } from 'prom-client';
import { importOptional } from '../optional-packages.ts';
import type { Signals, SignalSummary, WorkQueue } from '../queue/types.ts';

type PromClient = typeof import('prom-client');

/**
 * A5: the control-plane signals in the Prometheus text exposition format, rendered with prom-client's
 * Registry. Every scrape reads `queue.signals()` once and renders that one answer into a fresh
 * registry, so a scrape never shows a value kept from an earlier one. Times are in seconds (the
 * Prometheus base unit); totals are counters since the database was created.
 *
 *   leasehold_queue_depth{tenant,priority}                 ready tasks
 *   leasehold_admission_decisions_total{action,reason}     recorded decisions (RUN: claims)
 *   leasehold_active_leases{tenant}                        running tasks
 *   leasehold_lease_age_seconds{tenant,task_id,worker_id}  age of each active lease since its claim
 *   leasehold_retries_total{error_class}                   fail -> ready retries
 *   leasehold_awaiting_reconciliation                      uncertain tasks
 *   leasehold_wait_seconds{quantile}                       accepted -> first claim (0.5, 0.95, 1 = max) over the window
 *   leasehold_run_seconds{quantile}                        last claim -> result, over the window
 *   leasehold_wait_window_tasks, leasehold_run_window_tasks the samples behind them
 *   leasehold_rejections_total{reason}                     rejected enqueues
 *   leasehold_oldest_waiting_seconds{tenant}               how long each tenant's oldest ready task has waited
 *   leasehold_alert_stuck_while_capacity_normal            1 while the alert holds, else 0
 */
/** The Content-Type of a scrape's answer: prom-client's Registry.PROMETHEUS_CONTENT_TYPE (a test holds them equal). */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export async function renderPrometheus(signals: Signals, prefix = 'leasehold_'): Promise<string> {
  // prom-client is an optional peer dependency, loaded by the first render and never by `import
  // 'leasehold'`; when it is not installed the render rejects with MissingDependencyError naming it.
  const { Counter, Gauge, Registry } = await importOptional<PromClient>('prom-client', 'Prometheus text (renderPrometheus)');
  const registry = new Registry();
  const gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name: prefix + name, help, labelNames, registers: [registry] });
  const counter = (name: string, help: string, labelNames: string[]) => new Counter({ name: prefix + name, help, labelNames, registers: [registry] });
  const seconds = (ms: number) => ms / 1000;

  const depth = gauge('queue_depth', 'Ready tasks per tenant and priority.', ['tenant', 'priority']);
  for (const row of signals.depth) depth.set({ tenant: row.tenant, priority: String(row.priority) }, row.n);

  const decisions = counter('admission_decisions_total', 'Recorded admission decisions by action and reason (RUN: claims).', ['action', 'reason']);
  for (const row of signals.decisions) decisions.inc({ action: row.action, reason: row.reason }, row.n);

  const leases = gauge('active_leases', 'Active leases (running tasks) per tenant.', ['tenant']);
  const leaseAge = gauge('lease_age_seconds', 'Age of each active lease since its claim.', ['tenant', 'task_id', 'worker_id']);
  const perTenant = new Map<string, number>();
  for (const lease of signals.leases) {
    perTenant.set(lease.tenant, (perTenant.get(lease.tenant) ?? 0) + 1);
    leaseAge.set({ tenant: lease.tenant, task_id: String(lease.taskId), worker_id: lease.workerId }, seconds(lease.ageMs));
  }
  for (const [tenant, n] of perTenant) leases.set({ tenant }, n);

  const retries = counter('retries_total', 'Retries (fail -> ready) by error class.', ['error_class']);
  for (const row of signals.retries) retries.inc({ error_class: row.errorClass }, row.n);

  gauge('awaiting_reconciliation', 'Uncertain tasks awaiting reconciliation.').set(signals.awaitingReconciliation);

  summary(gauge, 'wait', 'Accepted to first claim', signals.waitMs);
  summary(gauge, 'run', 'Last claim to result', signals.runMs);

  const rejections = counter('rejections_total', 'Rejected enqueues by reason.', ['reason']);
  for (const row of signals.rejections) rejections.inc({ reason: row.reason }, row.n);

  const oldest = gauge('oldest_waiting_seconds', "How long each tenant's oldest ready task has waited.", ['tenant']);
  for (const row of signals.oldestWaiting) oldest.set({ tenant: row.tenant }, seconds(row.waitedMs));

  gauge('alert_stuck_while_capacity_normal', 'The oldest eligible, unexpired task has waited stuckAfterMs while slots are free (1) or not (0).').set(
    signals.alerts.stuckWhileCapacityNormal ? 1 : 0,
  );
  return registry.metrics();
}

function summary(gauge: (name: string, help: string, labelNames?: string[]) => Gauge, name: string, what: string, values: SignalSummary): void {
  const quantiles = gauge(`${name}_seconds`, `${what}, over the signals window (quantile 1 is the max).`, ['quantile']);
  for (const [quantile, value] of [['0.5', values.p50], ['0.95', values.p95], ['1', values.max]] as const) {
    if (value !== null) quantiles.set({ quantile }, value / 1000);
  }
  gauge(`${name}_window_tasks`, `Tasks behind leasehold_${name}_seconds.`).set(values.count);
}

/** A scrape handler's body: the signals now, rendered. */
export async function scrapePrometheus(queue: Pick<WorkQueue, 'signals'>, prefix?: string): Promise<string> {
  return renderPrometheus(await queue.signals(), prefix);
}
