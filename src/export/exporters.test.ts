import { metrics, type BatchObservableCallback, type Meter, type Observable } from '@opentelemetry/api';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Signals } from '../queue/types.ts';
import { registerOtelSignals } from './otel.ts';
import { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from './prometheus.ts';

const SIGNALS: Signals = {
  at: 1_000_000,
  depth: [{ tenant: 'acme', priority: 5, n: 3 }],
  decisions: [
    { action: 'RUN', reason: 'admitted', n: 7 },
    { action: 'DEFER', reason: 'rate_limited', n: 2 },
  ],
  leases: [{ taskId: 4, tenant: 'acme', workerId: 'w1', generation: 1, ageMs: 1_500, expiresInMs: 28_500 }],
  retries: [{ errorClass: 'rate_limited', n: 1 }],
  awaitingReconciliation: 1,
  waitMs: { count: 2, p50: 100, p95: 2_000, max: 2_000 },
  runMs: { count: 0, p50: null, p95: null, max: null },
  rejections: [{ reason: 'queue_full', n: 4 }],
  oldestWaiting: [{ tenant: 'acme', taskId: 2, enqueuedAt: 400_000, waitedMs: 600_000 }],
  alerts: { stuckWhileCapacityNormal: true },
};

describe('A5 exporters', () => {
  it('renders the signals as Prometheus text exposition', async () => {
    const text = await renderPrometheus(SIGNALS);
    for (const line of [
      '# TYPE leasehold_queue_depth gauge',
      'leasehold_queue_depth{tenant="acme",priority="5"} 3',
      '# TYPE leasehold_admission_decisions_total counter',
      'leasehold_admission_decisions_total{action="RUN",reason="admitted"} 7',
      'leasehold_admission_decisions_total{action="DEFER",reason="rate_limited"} 2',
      'leasehold_active_leases{tenant="acme"} 1',
      'leasehold_lease_age_seconds{tenant="acme",task_id="4",worker_id="w1"} 1.5',
      'leasehold_retries_total{error_class="rate_limited"} 1',
      'leasehold_awaiting_reconciliation 1',
      'leasehold_wait_seconds{quantile="0.5"} 0.1',
      'leasehold_wait_seconds{quantile="0.95"} 2',
      'leasehold_wait_window_tasks 2',
      'leasehold_run_window_tasks 0',
      'leasehold_rejections_total{reason="queue_full"} 4',
      'leasehold_oldest_waiting_seconds{tenant="acme"} 600',
      'leasehold_alert_stuck_while_capacity_normal 1',
    ]) {
      expect(text.split('\n')).toContain(line);
    }
    expect(text).not.toMatch(/leasehold_run_seconds\{/);
  });

  it('observes the signals on an OpenTelemetry meter, once per collection', async () => {
    const names = new Map<Observable, string>();
    let registered: { callback: BatchObservableCallback; observables: Observable[] } | undefined;
    const instrument = (name: string) => {
      const observable = { addCallback() {}, removeCallback() {} } as unknown as Observable;
      names.set(observable, name);
      return observable;
    };
    const meter = {
      createObservableGauge: instrument,
      createObservableCounter: instrument,
      addBatchObservableCallback: (callback: BatchObservableCallback, observables: Observable[]) => (registered = { callback, observables }),
      removeBatchObservableCallback: () => (registered = undefined),
    } as unknown as Meter;
    let reads = 0;
    const unregister = registerOtelSignals(meter, { signals: async () => (reads++, SIGNALS) });
    const seen: [string, number, Record<string, unknown> | undefined][] = [];
    await registered!.callback({ observe: (observable, value, attributes) => seen.push([names.get(observable)!, value, attributes]) });
    expect(reads).toBe(1);
    expect(registered!.observables).toHaveLength(11);
    expect(seen).toContainEqual(['leasehold.queue.depth', 3, { tenant: 'acme', priority: 5 }]);
    expect(seen).toContainEqual(['leasehold.admission.decisions', 7, { action: 'RUN', reason: 'admitted' }]);
    expect(seen).toContainEqual(['leasehold.lease.age', 1.5, { tenant: 'acme', task_id: 4, worker_id: 'w1' }]);
    expect(seen).toContainEqual(['leasehold.alert.stuck_while_capacity_normal', 1, undefined]);
    unregister();
    expect(registered).toBeUndefined();
  });

  it("gives prom-client's own content type (which it does not load just to name it)", () => {
    expect(PROMETHEUS_CONTENT_TYPE).toBe(Registry.PROMETHEUS_CONTENT_TYPE);
  });

  it("takes @opentelemetry/api's own Meter (its structural type admits the real one)", async () => {
    const meter: Meter = metrics.getMeter('leasehold-test');
    let reads = 0;
    const unregister = registerOtelSignals(meter, { signals: async () => (reads++, SIGNALS) });
    unregister();
    // Without an SDK's MeterProvider the API's meter is a no-op: nothing collects, so nothing is read.
    expect(reads).toBe(0);
  });
});
