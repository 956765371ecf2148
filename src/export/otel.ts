import type { WorkQueue } from '../queue/types.ts';

/**
 * What registerOtelSignals uses of an OpenTelemetry Meter (@opentelemetry/api's `Meter`, which is one):
 * structural types of leasehold's own, so its declarations compile without @opentelemetry/api installed,
 * and nothing of that package is loaded at run time (the caller brings the meter).
 */
export interface OtelMeter {
  createObservableGauge(name: string, options?: { description?: string; unit?: string }): OtelObservable;
  createObservableCounter(name: string, options?: { description?: string; unit?: string }): OtelObservable;
  addBatchObservableCallback(callback: OtelBatchCallback, observables: OtelObservable[]): void;
  removeBatchObservableCallback(callback: OtelBatchCallback, observables: OtelObservable[]): void;
}

/** An instrument the meter created: leasehold only hands it back to the meter. */
export type OtelObservable = object;

/** What a batch callback is given to record with (@opentelemetry/api's BatchObservableResult). */
export interface OtelBatchResult {
  observe(observable: OtelObservable, value: number, attributes?: Record<string, string | number | boolean>): void;
}

/** A batch observable callback, called once per collection. */
export type OtelBatchCallback = (result: OtelBatchResult) => void | Promise<void>;

/**
 * A5: the control-plane signals as OpenTelemetry metrics on a Meter of @opentelemetry/api: observable
 * gauges and (monotonic, cumulative) observable counters, all observed by one batch callback that
 * reads `queue.signals()` once per collection. The names and attributes follow the Prometheus
 * exporter (src/export/prometheus.ts); times are in seconds. Returns a function that unregisters the
 * callback. Without an SDK's MeterProvider registered, @opentelemetry/api's meter is a no-op.
 */
export function registerOtelSignals(meter: OtelMeter, queue: Pick<WorkQueue, 'signals'>, prefix = 'leasehold.'): () => void {
  const gauge = (name: string, description: string, unit?: string) => meter.createObservableGauge(prefix + name, unit === undefined ? { description } : { description, unit });
  const counter = (name: string, description: string) => meter.createObservableCounter(prefix + name, { description });
  const instruments = {
    depth: gauge('queue.depth', 'Ready tasks per tenant and priority.'),
    decisions: counter('admission.decisions', 'Recorded admission decisions by action and reason (RUN: claims).'),
    leases: gauge('leases.active', 'Active leases (running tasks) per tenant.'),
    leaseAge: gauge('lease.age', 'Age of each active lease since its claim.', 's'),
    retries: counter('retries', 'Retries (fail -> ready) by error class.'),
    awaiting: gauge('awaiting_reconciliation', 'Uncertain tasks awaiting reconciliation.'),
    wait: gauge('wait', 'Accepted to first claim over the signals window (quantile 1 is the max).', 's'),
    run: gauge('run', 'Last claim to result over the signals window (quantile 1 is the max).', 's'),
    rejections: counter('rejections', 'Rejected enqueues by reason.'),
    oldest: gauge('oldest_waiting', "How long each tenant's oldest ready task has waited.", 's'),
    stuck: gauge('alert.stuck_while_capacity_normal', 'The oldest eligible, unexpired task has waited stuckAfterMs while slots are free (1) or not (0).'),
  };
  const callback: OtelBatchCallback = async (observer) => {
    const signals = await queue.signals();
    for (const row of signals.depth) observer.observe(instruments.depth, row.n, { tenant: row.tenant, priority: row.priority });
    for (const row of signals.decisions) observer.observe(instruments.decisions, row.n, { action: row.action, reason: row.reason });
    const perTenant = new Map<string, number>();
    for (const lease of signals.leases) {
      perTenant.set(lease.tenant, (perTenant.get(lease.tenant) ?? 0) + 1);
      observer.observe(instruments.leaseAge, lease.ageMs / 1000, { tenant: lease.tenant, task_id: lease.taskId, worker_id: lease.workerId });
    }
    for (const [tenant, n] of perTenant) observer.observe(instruments.leases, n, { tenant });
    for (const row of signals.retries) observer.observe(instruments.retries, row.n, { error_class: row.errorClass });
    observer.observe(instruments.awaiting, signals.awaitingReconciliation);
    for (const [instrument, values] of [[instruments.wait, signals.waitMs], [instruments.run, signals.runMs]] as const) {
      for (const [quantile, value] of [['0.5', values.p50], ['0.95', values.p95], ['1', values.max]] as const) {
        if (value !== null) observer.observe(instrument, value / 1000, { quantile });
      }
    }
    for (const row of signals.rejections) observer.observe(instruments.rejections, row.n, { reason: row.reason });
    for (const row of signals.oldestWaiting) observer.observe(instruments.oldest, row.waitedMs / 1000, { tenant: row.tenant });
    observer.observe(instruments.stuck, signals.alerts.stuckWhileCapacityNormal ? 1 : 0);
  };
  const observables: OtelObservable[] = Object.values(instruments);
  meter.addBatchObservableCallback(callback, observables);
  return () => meter.removeBatchObservableCallback(callback, observables);
}
