import type { BudgetLevelRow, Step, StoreTx } from '../store/store.ts';
import { ConfigError } from './errors.ts';
import type { BudgetLevel, BudgetSpec, Needs, QueueConfig, Usage } from './types.ts';

/**
 * A1: named budgets. Three kinds, all in integers, all decided inside the transaction that takes or
 * gives back units, with time passed in:
 *
 * - `concurrency`, a semaphore: the level is the units held by running and uncertain tasks; a grant
 *   needs level + need <= limit. An uncertain task keeps its units (its worker may still hold the
 *   browser); they come back when its slot is freed (confirmStopped, reconcile).
 * - `rate`, a token bucket of `capacity` units refilled by `refill` units per `periodMs`. The level is
 *   kept scaled by periodMs (units x periodMs), so the refill of `elapsed` ms is exactly
 *   `elapsed x refill` scaled units: no division, no rounding, no floating point, and a bucket touched
 *   every millisecond refills exactly as one touched once a minute. The refill clock only moves forward
 *   (`updated_at` is the latest instant the bucket was written at): a clock that goes backwards grants
 *   nothing until it passes that instant again, and a reopened database refills only by the time that
 *   really elapsed, because the level and its instant are stored rows, not memory. A check that does not
 *   grant (a DEFER) writes nothing: the stored level moves only by grants and returns, which is what
 *   lets a checker replay every bucket exactly from the event log (I15).
 * - `total`, a cap per run or per session (tenant and topic): the level is the units used so far
 *   (reserved and not given back).
 *
 * A task's `needs` are what one attempt reserves at claim, all or nothing (every budget grants, or none
 * is touched). Checkpoints record what a run really consumed of metered budgets (model tokens, model
 * calls); a further model call reserves more through a fenced `reserve`; when the attempt's slot is
 * freed (the run ended, was retried, confirmed stopped or reconciled) the unused part goes back, once,
 * by a conditional update of the reservation row (released IS NULL). For a rate bucket the unused part
 * returns to the bucket (never above capacity): what the provider did not see used is not charged.
 */

/** The scope key of a budget for a task: '' (global), the tenant, the run or the session. */
export function scopeKey(spec: BudgetSpec, task: { id: number; tenant: string; topic: string }): string {
  if (spec.kind === 'total') return spec.per === 'run' ? `run:${task.id}` : `session:${task.tenant}\u001f${task.topic}`;
  return (spec.scope ?? 'global') === 'tenant' ? `tenant:${task.tenant}` : '';
}

/** The most one grant of a budget can ever give: a need above it is refused at enqueue (exceeds_budget). */
export function grantCeiling(spec: BudgetSpec): number {
  return spec.kind === 'rate' ? spec.capacity : spec.limit;
}

/** A rate bucket's level at `at`, scaled by periodMs, from its stored row (a full bucket if never used). */
export function rateLevelAt(spec: Extract<BudgetSpec, { kind: 'rate' }>, row: BudgetLevelRow | undefined, at: number): { scaled: number; since: number } {
  const full = spec.capacity * spec.periodMs;
  if (row === undefined) return { scaled: full, since: at };
  const elapsed = Math.max(0, at - row.updated_at);
  // Past the time that fills this bucket from its level (below zero after an overdraft) nothing more can
  // be added; bounding elapsed keeps the product an exact integer however long the bucket sat idle.
  const bounded = spec.refill === 0 ? 0 : Math.min(elapsed, Math.ceil(Math.max(0, full - row.level) / spec.refill));
  return { scaled: Math.min(full, row.level + bounded * spec.refill), since: Math.max(row.updated_at, at) };
}

/** The first instant at which a rate bucket holds `need` units, or undefined if it never will (no refill). */
export function rateRetryAt(spec: Extract<BudgetSpec, { kind: 'rate' }>, scaled: number, since: number, need: number): number | undefined {
  const deficit = need * spec.periodMs - scaled;
  if (deficit <= 0) return since;
  if (spec.refill === 0) return undefined;
  return since + Math.ceil(deficit / spec.refill);
}

export type Refusal = { budget: string; reason: 'rate_limited' | 'budget'; retryAt?: number; scope: string };

export interface PlannedGrant {
  budget: string;
  spec: BudgetSpec;
  scope: string;
  units: number;
  /** The budget's stored level after the grant. */
  level: number;
  updatedAt: number;
}

/**
 * Decides whether every need can be granted at `at`, without writing: the plan to apply, or the first
 * budget (in name order) that says no. `heldBack` names buckets that a better task is already waiting
 * for in this claim: a smaller need behind it must not take what it waits for (no starvation of the head).
 */
export function* planGrants(
  config: QueueConfig,
  tx: StoreTx,
  task: { id: number; tenant: string; topic: string },
  needs: Needs,
  at: number,
  heldBack?: ReadonlyMap<string, Refusal>,
): Step<{ ok: true; grants: PlannedGrant[] } | { ok: false; refusal: Refusal }> {
  const grants: PlannedGrant[] = [];
  for (const budget of Object.keys(needs).sort()) {
    const units = needs[budget] as number;
    const spec = budgetSpec(config, budget);
    if (spec === undefined || units === 0) continue;
    const scope = scopeKey(spec, task);
    const waiting = heldBack?.get(`${budget}\u0000${scope}`);
    if (waiting !== undefined) return { ok: false, refusal: waiting };
    const row = yield* tx.budgetLevelGet(budget, scope);
    if (spec.kind === 'rate') {
      const { scaled, since } = rateLevelAt(spec, row, at);
      if (scaled < units * spec.periodMs) {
        const retryAt = rateRetryAt(spec, scaled, since, units);
        return { ok: false, refusal: { budget, scope, reason: 'rate_limited', ...(retryAt === undefined ? {} : { retryAt }) } };
      }
      grants.push({ budget, spec, scope, units, level: scaled - units * spec.periodMs, updatedAt: since });
    } else {
      const used = row?.level ?? 0;
      if (used + units > spec.limit) return { ok: false, refusal: { budget, scope, reason: 'budget' } };
      grants.push({ budget, spec, scope, units, level: used + units, updatedAt: Math.max(row?.updated_at ?? at, at) });
    }
  }
  return { ok: true, grants };
}

/** Applies a plan: the budget levels and one reservation row per budget for this attempt. */
export function* applyGrants(tx: StoreTx, taskId: number, generation: number, grants: readonly PlannedGrant[], baseline: Usage | undefined, at: number): Step<Needs> {
  const reserved: Needs = {};
  for (const grant of grants) {
    yield* tx.budgetLevelPut(grant.budget, grant.scope, grant.level, grant.updatedAt);
    const meter = grant.spec.kind === 'concurrency' ? undefined : grant.spec.meter;
    const added = yield* tx.reservationAdd(taskId, generation, grant.budget, grant.units);
    if (!added) yield* tx.reservationInsert({ taskId, generation, budget: grant.budget, scope: grant.scope, reserved: grant.units, baseline: meter === undefined || baseline === undefined ? 0 : metered(meter, baseline), at });
    reserved[grant.budget] = grant.units;
  }
  return reserved;
}

export function metered(meter: 'tokens' | 'modelCalls', usage: Usage): number {
  return meter === 'tokens' ? usage.inputTokens + usage.outputTokens : usage.modelCalls;
}

/**
 * R1 with A1: a checkpoint records what the attempt consumed of each metered budget (its usage beyond
 * the usage it resumed from). Consumption above what was reserved (a model call that used more than the
 * worker reserved for it) is charged too: the units were spent, so the reservation grows to match and
 * the budget pays for it, a rate bucket going below zero if it must.
 */
export function* recordConsumption(config: QueueConfig, tx: StoreTx, taskId: number, generation: number, usage: Usage, at: number): Step<{ consumed: Needs; overdraft: Needs }> {
  const consumed: Needs = {};
  const overdraft: Needs = {};
  for (const row of yield* tx.reservationListHeld(taskId)) {
    if (row.generation !== generation) continue;
    const spec = budgetSpec(config, row.budget);
    if (spec === undefined || spec.kind === 'concurrency' || spec.meter === undefined) continue;
    const used = Math.max(0, metered(spec.meter, usage) - row.baseline);
    if (used === row.consumed) continue;
    if (used > row.reserved) {
      const over = used - row.reserved;
      const level = yield* tx.budgetLevelGet(row.budget, row.scope);
      if (spec.kind === 'rate') {
        const { scaled, since } = rateLevelAt(spec, level, at);
        yield* tx.budgetLevelPut(row.budget, row.scope, scaled - over * spec.periodMs, since);
      } else {
        yield* tx.budgetLevelPut(row.budget, row.scope, (level?.level ?? 0) + over, Math.max(level?.updated_at ?? at, at));
      }
      yield* tx.reservationAdd(taskId, generation, row.budget, over);
      overdraft[row.budget] = over;
    }
    yield* tx.reservationSetConsumed(taskId, generation, row.budget, used);
    consumed[row.budget] = used;
  }
  return { consumed, overdraft };
}

/**
 * The end of an attempt's hold on its units (the edge that frees its slot): each reservation still held
 * gives back its unused part, once. A concurrency budget gets every unit back; a rate bucket the units
 * not consumed (never above capacity); a total keeps what was consumed and frees the rest.
 */
export function* releaseReservations(config: QueueConfig, tx: StoreTx, taskId: number, at: number): Step<{ released: Needs; consumed: Needs } | undefined> {
  const rows = yield* tx.reservationListHeld(taskId);
  if (rows.length === 0) return undefined;
  const released: Needs = {};
  const consumed: Needs = {};
  for (const row of rows) {
    const spec = budgetSpec(config, row.budget);
    const kept = spec === undefined || spec.kind === 'concurrency' ? 0 : spec.meter === undefined ? row.reserved : Math.min(row.consumed, row.reserved);
    const back = row.reserved - kept;
    // The row keeps reserved = consumed + released: an unmetered budget consumed all it reserved.
    if (!(yield* tx.reservationRelease(taskId, row.generation, row.budget, back, kept, at))) continue;
    // Summed per budget: the event says every unit this edge gave back, whichever attempt's row it was.
    // Own entries only: a budget named `constructor` would otherwise add to Object.prototype's function.
    released[row.budget] = (Object.hasOwn(released, row.budget) ? (released[row.budget] as number) : 0) + back;
    consumed[row.budget] = (Object.hasOwn(consumed, row.budget) ? (consumed[row.budget] as number) : 0) + kept;
    if (spec === undefined || back === 0) continue;
    const level = yield* tx.budgetLevelGet(row.budget, row.scope);
    if (spec.kind === 'rate') {
      const { scaled, since } = rateLevelAt(spec, level, at);
      yield* tx.budgetLevelPut(row.budget, row.scope, Math.min(spec.capacity * spec.periodMs, scaled + back * spec.periodMs), since);
    } else {
      yield* tx.budgetLevelPut(row.budget, row.scope, Math.max(0, (level?.level ?? 0) - back), Math.max(level?.updated_at ?? at, at));
    }
  }
  return { released, consumed };
}

/** The view of a stored budget row that budgetLevels() reports. */
export function levelView(config: QueueConfig, row: BudgetLevelRow, at: number): BudgetLevel | undefined {
  const spec = budgetSpec(config, row.budget);
  if (spec === undefined) return undefined;
  const base = { budget: row.budget, scope: row.scope, kind: spec.kind, updatedAt: row.updated_at };
  if (spec.kind === 'rate') return { ...base, level: Math.floor(rateLevelAt(spec, row, at).scaled / spec.periodMs), limit: spec.capacity };
  return { ...base, level: row.level, limit: spec.limit };
}

/** Which budget, if any, could never grant this need: refused at enqueue (exceeds_budget). */
export function unsatisfiable(config: QueueConfig, needs: Needs): { budget: string; message: string } | undefined {
  for (const budget of Object.keys(needs).sort()) {
    const spec = budgetSpec(config, budget);
    const units = needs[budget] as number;
    if (spec === undefined) continue;
    const ceiling = grantCeiling(spec);
    if (units > ceiling) return { budget, message: `needs ${units} of ${budget}, which never grants more than ${ceiling} at once` };
  }
  return undefined;
}

/** Needs of the budgets a further model call consumes (the metered ones): what reserve() takes by default. */
export function meteredNeeds(config: QueueConfig, needs: Needs): Needs {
  const out: Needs = {};
  for (const [budget, units] of Object.entries(needs)) {
    const spec = budgetSpec(config, budget);
    if (spec !== undefined && spec.kind !== 'concurrency' && spec.meter !== undefined) out[budget] = units;
  }
  return out;
}

const BUDGET_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

/**
 * A1: the configured spec of a budget name, or undefined. Names reach the core from callers' needs and
 * from stored rows; read as a plain property, `constructor` or `toString` would find Object.prototype's
 * functions (issue 31), so only an own entry of config.budgets counts.
 */
export function budgetSpec(config: QueueConfig, name: string): BudgetSpec | undefined {
  return Object.hasOwn(config.budgets, name) ? config.budgets[name] : undefined;
}

/** The fields each kind of budget takes. */
const BUDGET_FIELDS: Readonly<Record<string, readonly string[]>> = {
  concurrency: ['kind', 'limit', 'scope'],
  rate: ['kind', 'capacity', 'refill', 'periodMs', 'scope', 'meter'],
  total: ['kind', 'limit', 'per', 'meter'],
};

/** Checks config.budgets; the first problem is a ConfigError naming the field. */
export function validateBudgets(budgets: unknown): Record<string, BudgetSpec> {
  if (budgets === null || typeof budgets !== 'object' || Array.isArray(budgets)) throw new ConfigError('budgets', 'expected an object keyed by budget name');
  const out: Record<string, BudgetSpec> = {};
  for (const [name, raw] of Object.entries(budgets as Record<string, unknown>)) {
    const field = `budgets.${name}`;
    if (!BUDGET_NAME.test(name)) throw new ConfigError(field, 'a budget name is letters, digits, _ . - (at most 64, not starting with a digit)');
    // Needs, reservations and events carry budget names as keys of plain objects, where `__proto__`
    // cannot be an own key: assigned, it replaces the object's prototype and the budget vanishes.
    if (name === '__proto__') throw new ConfigError(field, 'a budget cannot be named __proto__ (it cannot be a key of the plain objects that carry needs)');
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(field, 'expected { kind, ... }');
    const spec = raw as Record<string, unknown>;
    const keys = typeof spec.kind === 'string' && Object.hasOwn(BUDGET_FIELDS, spec.kind) ? BUDGET_FIELDS[spec.kind] : undefined;
    if (keys === undefined) throw new ConfigError(`${field}.kind`, `expected 'concurrency', 'rate' or 'total', got ${JSON.stringify(spec.kind)}`);
    for (const key of Object.keys(spec)) if (!keys.includes(key)) throw new ConfigError(`${field}.${key}`, `not a field of a ${String(spec.kind)} budget (${keys.join(', ')})`);
    const int = (key: string, min: number) => {
      const value = spec[key];
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) throw new ConfigError(`${field}.${key}`, `expected an integer >= ${min}, got ${JSON.stringify(value)}`);
      return value;
    };
    if (spec.scope !== undefined && spec.scope !== 'global' && spec.scope !== 'tenant') throw new ConfigError(`${field}.scope`, `expected 'global' or 'tenant', got ${JSON.stringify(spec.scope)}`);
    if (spec.meter !== undefined && spec.meter !== 'tokens' && spec.meter !== 'modelCalls') throw new ConfigError(`${field}.meter`, `expected 'tokens' or 'modelCalls', got ${JSON.stringify(spec.meter)}`);
    if (spec.kind === 'rate') {
      const capacity = int('capacity', 1);
      const refill = int('refill', 0);
      const periodMs = int('periodMs', 1);
      // The level is kept in units x periodMs: that product must stay an exact integer.
      if (!Number.isSafeInteger(capacity * periodMs)) throw new ConfigError(`${field}.capacity`, `capacity x periodMs must stay below 2^53 (${capacity} x ${periodMs})`);
      out[name] = { kind: 'rate', capacity, refill, periodMs, ...(spec.scope === undefined ? {} : { scope: spec.scope as 'global' | 'tenant' }), ...(spec.meter === undefined ? {} : { meter: spec.meter as 'tokens' }) };
    } else if (spec.kind === 'concurrency') {
      out[name] = { kind: 'concurrency', limit: int('limit', 1), ...(spec.scope === undefined ? {} : { scope: spec.scope as 'global' | 'tenant' }) };
    } else {
      if (spec.per !== 'run' && spec.per !== 'session') throw new ConfigError(`${field}.per`, `expected 'run' or 'session', got ${JSON.stringify(spec.per)}`);
      out[name] = { kind: 'total', limit: int('limit', 1), per: spec.per, ...(spec.meter === undefined ? {} : { meter: spec.meter as 'tokens' }) };
    }
  }
  return out;
}

/** Checks an enqueue's needs against the configured budgets: known names, whole units. */
export function validateNeeds(needs: unknown, config: QueueConfig): { ok: true; needs: Needs | null } | { ok: false; field: string; message: string } {
  if (needs === undefined || needs === null) return { ok: true, needs: null };
  if (typeof needs !== 'object' || Array.isArray(needs)) return { ok: false, field: 'needs', message: 'needs expected an object of budget name to units' };
  const out: Needs = {};
  for (const [budget, units] of Object.entries(needs as Record<string, unknown>)) {
    if (!Object.hasOwn(config.budgets, budget)) {
      const known = Object.keys(config.budgets);
      return { ok: false, field: `needs.${budget}`, message: `needs.${budget} names no configured budget (${known.length === 0 ? 'none is configured' : `known: ${known.join(', ')}`})` };
    }
    if (typeof units !== 'number' || !Number.isSafeInteger(units) || units < 0) return { ok: false, field: `needs.${budget}`, message: `needs.${budget} expected an integer >= 0, got ${JSON.stringify(units)}` };
    if (units > 0) out[budget] = units;
  }
  return { ok: true, needs: Object.keys(out).length === 0 ? null : out };
}

