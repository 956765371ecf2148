/** Leasehold's public entry: the work queue, its ports and adapters, and its types. */
export type { Clock, Random, Waiter } from './ports.ts';
export { SystemClock } from './adapters/clock.ts';
export { CryptoRandom } from './adapters/random.ts';
export { TimerWaiter } from './adapters/waiter.ts';
export { openWorkQueue, type OpenWorkQueueOptions } from './work-queue.ts';
export { DEFAULT_CONFIG, resolveConfig } from './queue/config.ts';
export { BusyError, ClosedError, ConfigError, InputError, InvariantError, LeaseholdError, OpenError, RetryableStoreError, StorageError, type StorageErrorCode } from './queue/errors.ts';
export { EDGES, STATES, TRANSITIONS, TERMINAL_STATES, LIVE_STATES, OCCUPYING_STATES, isTerminal, canTransition, type Edge, type TransitionEvent } from './queue/states.ts';
export type { Store, StoreTx } from './store/store.ts';
export { DEFAULT_DURABILITY, DURABILITIES, type Durability } from './store/durability.ts';
export { score, compareCandidates, retryBackoffMs } from './queue/scoring.ts';
export { defaultAdmission, type AdmissionPolicy, type AdmissionRequest, type AdmissionStage } from './queue/admission.ts';
export { canonicalJson, sha256Hex } from './canonical-json.ts';
export * from './queue/types.ts';
export { Worker, type WorkerOptions } from './worker/worker.ts';
export { runClaimedTask, type RunDependencies } from './worker/run.ts';
export { requestKey, fingerprint } from './worker/fingerprint.ts';
export * from './worker/types.ts';
