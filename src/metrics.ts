/**
 * `leasehold/metrics`: the control-plane signals (SPEC A5, `queue.signals()`) for a metrics system.
 * Prometheus text needs the optional peer dependency `prom-client` (`npm install prom-client`), loaded by
 * the first render: without it, renderPrometheus rejects with MissingDependencyError naming it.
 * registerOtelSignals takes any OpenTelemetry Meter (@opentelemetry/api's is one) and loads nothing itself.
 */
export { renderPrometheus, scrapePrometheus, PROMETHEUS_CONTENT_TYPE } from './export/prometheus.ts';
export { registerOtelSignals, type OtelMeter, type OtelObservable, type OtelBatchResult, type OtelBatchCallback } from './export/otel.ts';
export { MissingDependencyError } from './queue/errors.ts';
export type { Signals, SignalSummary } from './queue/types.ts';
