/**
 * Leasehold's public entry: the work queue, its ports and adapters, and its types. Importing it loads
 * better-sqlite3 and none of the optional peer dependencies (pg, prom-client, @opentelemetry/api,
 * @electric-sql/pglite, zod, seedrandom): each is loaded by the feature that needs it, on first use
 * (src/optional-packages.ts). The PostgreSQL and metrics parts are also at `leasehold/postgres`
 * (src/postgres.ts) and `leasehold/metrics` (src/metrics.ts).
 */
export type { Clock, Random, Waiter } from './ports.ts';
export { SystemClock } from './adapters/clock.ts';
export { CryptoRandom } from './adapters/random.ts';
export { TimerWaiter } from './adapters/waiter.ts';
export { openWorkQueue, type OpenWorkQueueOptions } from './work-queue.ts';
export { DEFAULT_CONFIG, resolveConfig } from './queue/config.ts';
export { BusyError, ClosedError, ConfigError, InputError, InvariantError, LeaseholdError, MissingDependencyError, OpenError, RetryableStoreError, StorageError, type StorageErrorCode, ConnectionError, type ConnectionErrorCode } from './queue/errors.ts';
export { EDGES, STATES, TRANSITIONS, TERMINAL_STATES, LIVE_STATES, OCCUPYING_STATES, isTerminal, canTransition, type Edge, type TransitionEvent } from './queue/states.ts';
export type { Store, StoreTx } from './store/store.ts';
export { SqliteStore } from './store/sqlite-store.ts';
export { PgStore, type PgStoreOptions } from './store/pg-store.ts';
export { DEFAULT_DURABILITY, DURABILITIES, type Durability } from './store/durability.ts';
export { score, compareCandidates, retryBackoffMs } from './queue/scoring.ts';
export { defaultAdmission, type AdmissionPolicy, type AdmissionRequest, type AdmissionStage } from './queue/admission.ts';
export { canonicalJson, sha256Hex } from './canonical-json.ts';
export * from './queue/types.ts';
export { Worker, type WorkerOptions } from './worker/worker.ts';
export { runClaimedTask, type RunDependencies } from './worker/run.ts';
export { requestKey, fingerprint } from './worker/fingerprint.ts';
export * from './worker/types.ts';
export { SIGNALS_WINDOW } from './queue/signals.ts';
export { renderPrometheus, scrapePrometheus, PROMETHEUS_CONTENT_TYPE } from './export/prometheus.ts';
export { registerOtelSignals } from './export/otel.ts';
export { defineAgent, loadAgentModule, buildAgent, productionAgentEnv, isAgentDefinition, AgentModuleError, UnknownExternalError, AGENT_MODULE_EXTENSIONS, type AgentDefinition, type AgentEnv, type AgentParts, type AgentBuild, type External, type ExternalFactories } from './worker/agent.ts';
export { Supervisor, type SupervisorOptions, type SupervisorEvent, type SupervisorResult, type SupervisedProcess } from './worker/supervisor.ts';
