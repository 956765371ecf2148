import { createHash } from 'node:crypto';
import type { QueueConfig, TaskState } from '../../src/queue/types.ts';

/**
 * The SPEC's rules the checkers judge by, written again from the SPEC on purpose, as spec-formulas.ts
 * does for the score: the task states and the moves between them, the live, occupying and terminal
 * sets, the configuration defaults, the retryable error classes and the effect request key. A checker
 * that imported these from src/ would agree with any bug planted there. If the SPEC changes, change
 * this file by reading the SPEC, not src/. Only types come from src/ (they carry no decision);
 * spec-rules.test.ts shows that src/ agrees with this file today, so a drift is seen, not adopted.
 */

// ---------------------------------------------------------------- states and their moves

/** Core API, "Task states", in the SPEC's order. */
export const SPEC_STATES = ['ready', 'running', 'uncertain', 'done', 'failed', 'superseded', 'cancelled', 'expired'] as const satisfies readonly TaskState[];

/** A move the SPEC allows; `from: null` creates the task. `why` names the requirements that allow it. */
export interface SpecMove {
  from: TaskState | null;
  to: TaskState;
  why: string;
}

/**
 * Every move of a task's state, each from the requirement that makes it. The SPEC has no table: this
 * one is read off Q1-Q16, R5, R6 and I6. Two moves are implied rather than spelt out (marked below).
 */
export const SPEC_MOVES: readonly SpecMove[] = [
  { from: null, to: 'ready', why: 'Q1: an accepted enqueue queues the task' },
  { from: null, to: 'superseded', why: 'Q2: a version older than one already queued has not started, so it arrives superseded and never runs' },
  { from: 'ready', to: 'running', why: 'Q5, Q7: a claim marks it running' },
  { from: 'ready', to: 'superseded', why: 'Q2: a newer version supersedes a version that has not started' },
  { from: 'ready', to: 'cancelled', why: 'Q13: a ready task is cancelled at once' },
  { from: 'ready', to: 'expired', why: 'Q14: past its deadline at claim, the task becomes expired instead of running' },
  { from: 'ready', to: 'failed', why: 'Q16, I6, R6: a retry past maxRetryAgeMs (or out of deliveries) ends failed without running' },
  { from: 'running', to: 'done', why: 'Q12: the execution ended (Q2: a stale result is done too, outcome stale_input)' },
  { from: 'running', to: 'ready', why: 'Q16: a retryable fail goes back to ready after a backoff (R8: an interrupted run is handed back)' },
  { from: 'running', to: 'failed', why: 'Q16: a non-retryable fail, or retries exhausted' },
  { from: 'running', to: 'cancelled', why: 'Q13: the worker sees cancelRequested at a step boundary and ends the run cancelled' },
  { from: 'running', to: 'expired', why: 'Q14: past its deadline before a tool call or before commit' },
  { from: 'running', to: 'uncertain', why: 'Q10: a running task past its lease becomes uncertain, keeping its slot' },
  { from: 'uncertain', to: 'ready', why: 'Q11: confirmStopped sends it back for another attempt; R5: the reconciler re-queues it' },
  { from: 'uncertain', to: 'failed', why: 'Q11: confirmStopped once attempts reached maxAttempts; R6: deliveries exhausted' },
  // Implied: Q11 names only ready and failed, but a persisted cancel (Q13) must not be run again.
  { from: 'uncertain', to: 'cancelled', why: 'Q13 with Q11: a cancel requested while it ran is honoured when it leaves uncertain' },
  // Implied: Q11 names only ready and failed, but an expired task causes no effect and frees its slot (Q14, A8).
  { from: 'uncertain', to: 'expired', why: 'Q14 with Q11: a task past its deadline leaves uncertain expired, not to run again' },
];

/** The states each state may move to (no state moves to itself: a heartbeat is not a move). */
export const SPEC_NEXT: Readonly<Record<TaskState, readonly TaskState[]>> = Object.fromEntries(
  SPEC_STATES.map((state) => [state, SPEC_MOVES.filter((move) => move.from === state).map((move) => move.to)]),
) as unknown as Record<TaskState, readonly TaskState[]>;

/** The states a task is created in (Q1, Q2). */
export const SPEC_INITIAL_STATES: readonly TaskState[] = SPEC_MOVES.filter((move) => move.from === null).map((move) => move.to);

/** Q3: capacity counts ready + running + uncertain: the states a task is still live in. */
export const SPEC_LIVE_STATES = ['ready', 'running', 'uncertain'] as const satisfies readonly TaskState[];

/** Q6, Q10: the concurrency quotas count running + uncertain; an uncertain task keeps its slot. */
export const SPEC_OCCUPYING_STATES = ['running', 'uncertain'] as const satisfies readonly TaskState[];

/**
 * I11: every accepted task ends terminal: the states with no move out (Q12 done, I6 and R6 failed,
 * Q2 superseded, Q13 cancelled, Q14 expired). spec-rules.test.ts checks they are exactly the states
 * Q3 does not count as live.
 */
export const SPEC_TERMINAL_STATES: readonly TaskState[] = SPEC_STATES.filter((state) => SPEC_NEXT[state].length === 0);

const STATE_SET = new Set<string>(SPEC_STATES);

export function specIsTaskState(value: unknown): value is TaskState {
  return typeof value === 'string' && STATE_SET.has(value);
}

export function specIsTerminal(state: TaskState): boolean {
  return SPEC_NEXT[state].length === 0;
}

export function specAllowsMove(from: TaskState, to: TaskState): boolean {
  return SPEC_NEXT[from]?.includes(to) ?? false;
}

// ---------------------------------------------------------------- error classes

/** Q16: a fail of one of these classes is retried (within maxAttempts and maxRetryAgeMs). */
export const SPEC_RETRYABLE_ERROR_CLASSES = ['rate_limited', 'transient_network', 'db_busy', 'tool_timeout'] as const;

/** Q16: a fail of one of these classes fails at once. */
// A7: a refused tool-call graph fails the run `invalid_plan`, not retried.
export const SPEC_NON_RETRYABLE_ERROR_CLASSES = ['permission_denied', 'invalid_tool_schema', 'policy_rejected', 'business_error', 'invalid_plan'] as const;

// ---------------------------------------------------------------- configuration

/** The configuration fields a checker reads. */
export type JudgeConfig = Pick<
  QueueConfig,
  | 'capacity'
  | 'globalLimit'
  | 'perTenantLimit'
  | 'tenantLimits'
  | 'leaseMs'
  | 'heartbeatMs'
  | 'agingPeriodMs'
  | 'agingCap'
  | 'maxAttempts'
  | 'maxDeliveries'
  | 'baseDelayMs'
  | 'maxDelayMs'
  | 'maxRetryAgeMs'
  | 'tierHolds'
  | 'tokensPerCredit'
  | 'reconciliation'
  | 'budgets'
  | 'criticalHeadroom'
  | 'sessionPolicy'
  | 'fairness'
  | 'tenantWeights'
  | 'stuckAfterMs'
>;

/**
 * The defaults ("every one is configurable"). Four numbers are not in the SPEC, which names the knobs
 * (Q16 baseDelayMs, maxDelayMs, maxRetryAgeMs; R4 charges usage in credits) but not their defaults:
 * for those the judge takes the project's documented values as its own assumption, and
 * spec-rules.test.ts makes any change to them visible.
 */
export const SPEC_DEFAULTS: Readonly<JudgeConfig> = Object.freeze({
  capacity: 100, // Q3
  globalLimit: 2, // Q6
  perTenantLimit: 1, // Q6: every tenant, unless named in tenantLimits
  tenantLimits: {},
  leaseMs: 30_000, // Q7
  heartbeatMs: 10_000, // Q9: "Default every 10 s"
  agingPeriodMs: 60_000, // Q4
  agingCap: 30, // Q4
  maxAttempts: 3, // Q11
  maxDeliveries: 3, // R6
  baseDelayMs: 1_000, // not in the SPEC (Q16 names it)
  maxDelayMs: 60_000, // not in the SPEC (Q16 names it)
  maxRetryAgeMs: 3_600_000, // not in the SPEC (Q16, A4 name it)
  tierHolds: { standard: 20, long: 60 }, // R4
  tokensPerCredit: 1_000, // not in the SPEC (R4 charges checkpointed usage in credits)
  reconciliation: 'hold', // R5
  budgets: {}, // A1: budgets are declared in config; none unless the scenario declares them
  criticalHeadroom: 10, // A2: "criticalHeadroom, default 10 tasks"
  sessionPolicy: 'serial', // A6: "This `serial` policy is the default"
  fairness: 'priority', // A3: "default 'priority', weight 1"
  tenantWeights: {},
  stuckAfterMs: 600_000, // A5: "has waited 10 min (configurable)"
});

/**
 * The configuration a run's queue was opened with: its overrides over the defaults. A map given is
 * taken whole for tenantLimits (the tenants it names) and merged per tier for tierHolds. Validation
 * is not the judge's: the scenario schema and the queue refused an invalid configuration before the run.
 */
export function specConfig(overrides: Partial<QueueConfig> = {}): JudgeConfig {
  const config = { ...SPEC_DEFAULTS } as Record<keyof JudgeConfig, unknown>;
  for (const field of Object.keys(SPEC_DEFAULTS) as (keyof JudgeConfig)[]) {
    if (overrides[field] !== undefined) config[field] = overrides[field];
  }
  config.tenantLimits = { ...(overrides.tenantLimits ?? SPEC_DEFAULTS.tenantLimits) };
  config.tierHolds = { ...SPEC_DEFAULTS.tierHolds, ...(overrides.tierHolds ?? {}) };
  config.budgets = { ...(overrides.budgets ?? SPEC_DEFAULTS.budgets) };
  config.tenantWeights = { ...(overrides.tenantWeights ?? SPEC_DEFAULTS.tenantWeights) };
  return config as unknown as JudgeConfig;
}

// ---------------------------------------------------------------- budgets and admission (A1, A2)

/** A2: the reasons an admission decision may carry (the SPEC's set; `queue_full` is Q3's name for capacity). */
export const SPEC_ADMISSION_REASONS: readonly string[] = ['tenant_paused', 'capacity', 'over_capacity', 'queue_full', 'session_busy', 'rate_limited', 'budget', 'expired', 'exceeds_budget'];

/** A2: the reasons that say the queue was out of room (what critical work is never REJECTed for). */
export const SPEC_CAPACITY_REASONS: readonly string[] = ['capacity', 'over_capacity', 'queue_full'];

/**
 * A1: whose units a task's need of a budget takes: one pool ('' global, the default), one per tenant
 * ('tenant:T'), and for a total one per run ('run:ID', the run is the task) or per session
 * ('session:T\u001ftopic', a session being a tenant's topic).
 */
export function specBudgetScope(spec: QueueConfig['budgets'][string], task: { id: number; tenant: string; topic: string }): string {
  if (spec.kind === 'total') return spec.per === 'run' ? `run:${task.id}` : `session:${task.tenant}\u001f${task.topic}`;
  return spec.scope === 'tenant' ? `tenant:${task.tenant}` : '';
}

// ---------------------------------------------------------------- the effect request key

/**
 * R3: request key = runId:action:fingerprint, the fingerprint a hash of the payload in canonical form
 * (items sorted by id); runId = taskId (Vocabulary). The SPEC does not say which hash, nor how two ids
 * compare: the judge pins the first 24 hex digits of SHA-256 and ids compared as strings, by code unit,
 * the form the queue's keys take, so that the keys the provider recorded can be compared at all.
 */
export function specRequestKey(runId: number, action: string, payload: unknown): string {
  const fingerprint = createHash('sha256').update(specCanonicalJson(sortItemsById(payload))).digest('hex').slice(0, 24);
  return `${runId}:${action}:${fingerprint}`;
}

/**
 * Canonical JSON: object keys in code-unit order, no whitespace, members whose value is undefined left
 * out, so data that is equal serialises the same whatever order it was built in (Q1's hash, R3's).
 * A value with no JSON form (a non-finite number, a function) has no canonical form and is refused.
 */
export function specCanonicalJson(value: unknown): string {
  // Written into one list of pieces and joined once: the judge compares and hashes these texts, and a
  // text built by concatenation is a tree of pieces that each comparison would walk again.
  const parts: string[] = [];
  writeCanonical(value, parts);
  return parts.join('');
}

function writeCanonical(value: unknown, parts: string[]): void {
  if (Array.isArray(value)) {
    parts.push('[');
    for (let index = 0; index < value.length; index++) {
      if (index > 0) parts.push(',');
      // A hole of a sparse array leaves its place empty ([1,,2]), as joining the mapped items did.
      if (index in value) writeCanonical(value[index], parts);
    }
    parts.push(']');
    return;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    parts.push('{');
    let first = true;
    for (const key of Object.keys(record).sort()) {
      const member = record[key];
      if (member === undefined) continue;
      parts.push(first ? '' : ',', JSON.stringify(key), ':');
      first = false;
      writeCanonical(member, parts);
    }
    parts.push('}');
    return;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError(`no canonical JSON for ${value}`);
  const text = typeof value === 'bigint' ? undefined : JSON.stringify(value);
  if (text === undefined) throw new TypeError(`no canonical JSON for a ${typeof value}`);
  parts.push(text);
}

/**
 * R3: what makes two effects of one run the same effect, whatever the key's format: the action and the
 * payload as canonical JSON with its sets of items ordered by id (the fingerprint's input).
 */
export function specEffectIdentity(runId: number, action: string, payload: unknown): string {
  return `${runId}\u0000${action}\u0000${specCanonicalJson(sortItemsById(payload))}`;
}

/** R3: an array whose items all carry an id (a string or a number) is a set of items: order by id. */
function sortItemsById(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(sortItemsById);
    if (items.length === 0 || !items.every(hasId)) return items;
    // A stable sort: items that share an id keep their order, as the SPEC gives no rule for them.
    return items.sort((a, b) => compareCodeUnits(String(a.id), String(b.id)));
  }
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, sortItemsById(member)]));
  }
  return value;
}

function hasId(item: unknown): item is { id: string | number } {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) return false;
  const id = (item as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number';
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
