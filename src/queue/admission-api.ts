import type { Step, StoreTx } from '../store/store.ts';
import { applyGrants, budgetSpec, levelView, meteredNeeds, planGrants, validateNeeds } from './budgets.ts';
import { STALE_LEASE, fence, holder, holdsLease, now, read, write, type Holder, type QueueContext } from './context.ts';
import { endAsHolder } from './holder-writes.ts';
import type { AdmissionRecord, BudgetLevel, Needs, ReserveResult, TenantPause } from './types.ts';

/**
 * The Admission API's operations that are not the claim's (A1, A2): tenant pause and resume, the
 * fenced `reserve` of a further model call, and the admin reads of budget levels and decisions.
 */

type PauseResult = { ok: true; changed: boolean } | { ok: false; error: 'invalid_input'; field: string; message: string };

function badTenant(tenant: unknown): PauseResult | undefined {
  if (typeof tenant === 'string' && tenant.trim() !== '') return undefined;
  return { ok: false, error: 'invalid_input', field: 'tenant', message: 'tenant expected a non-empty string' };
}

/**
 * A2: a paused tenant gets no new lease; its running leases continue. The pause is a row (it survives
 * a restart) and each change is recorded among the admission decisions; pausing a paused tenant
 * changes nothing and records nothing.
 */
export function pauseTenant(context: QueueContext, tenant: string, reason: string): Promise<PauseResult> {
  const bad = badTenant(tenant);
  if (bad !== undefined) return Promise.resolve(bad);
  if (typeof reason !== 'string' || reason.trim() === '') {
    return Promise.resolve({ ok: false, error: 'invalid_input', field: 'reason', message: 'reason expected a non-empty string (say why, for the audit)' });
  }
  return write(context, 'pauseTenant', (tx, at) => pauseIn(tx, at, tenant, reason));
}

function* pauseIn(tx: StoreTx, at: number, tenant: string, reason: string): Step<PauseResult> {
  const changed = yield* tx.tenantPause(tenant, reason, at);
  if (changed) yield* tx.admissionInsert({ at, action: 'PAUSE', reason, tenant, task_id: null, retry_at: null, budget: null });
  return { ok: true, changed };
}

export function resumeTenant(context: QueueContext, tenant: string): Promise<PauseResult> {
  const bad = badTenant(tenant);
  if (bad !== undefined) return Promise.resolve(bad);
  return write(context, 'resumeTenant', (tx, at) => resumeIn(tx, at, tenant));
}

function* resumeIn(tx: StoreTx, at: number, tenant: string): Step<PauseResult> {
  const changed = yield* tx.tenantResume(tenant);
  if (changed) yield* tx.admissionInsert({ at, action: 'RESUME', reason: 'resumed', tenant, task_id: null, retry_at: null, budget: null });
  // W1: the tenant's ready tasks are claimable again.
  if (changed) tx.txMarkClaimable();
  return { ok: true, changed };
}

export async function pausedTenants(context: QueueContext): Promise<TenantPause[]> {
  return (await read(context, 'pausedTenants', (tx) => tx.tenantPauseList())).map((row) => ({ tenant: row.tenant, reason: row.reason, at: row.at }));
}

/**
 * A1: a further model call beyond what the claim reserved reserves more, fenced (Q8). All or nothing.
 * A rate bucket that cannot grant yet answers `rate_limited` with the instant it can (nothing written);
 * a total that cannot grant never will, so the run ends failed `budget_exhausted` in this transaction
 * (A4) and the answer says so; a zombie's reserve is stale_lease and takes nothing.
 */
export function reserve(context: QueueContext, taskId: number, workerId: string, generation: number, needs?: Needs): Promise<ReserveResult> {
  const who = holder(taskId, workerId, generation);
  let asked: Needs | null = null;
  if (needs !== undefined) {
    const checked = validateNeeds(needs, context.config);
    if (!checked.ok) return Promise.resolve({ ok: false, error: 'invalid_input', field: checked.field, message: checked.message });
    asked = checked.needs ?? {};
  }
  return write(context, 'reserve', (tx, at) => reserveIn(context, tx, at, who, asked), { holderRow: who.taskId });
}

function* reserveIn(context: QueueContext, tx: StoreTx, at: number, who: Holder, asked: Needs | null): Step<ReserveResult> {
  const row = yield* tx.holderRow(who.taskId);
  if (!holdsLease(row, who.workerId, who.generation, at)) return STALE_LEASE;
  const task = yield* tx.claimCandidate(who.taskId);
  if (task === undefined) return STALE_LEASE;
  const needs = asked ?? (task.needs === null ? {} : meteredNeeds(context.config, JSON.parse(task.needs) as Needs));
  if (Object.keys(needs).length === 0) return { ok: true, reserved: {} };
  const plan = yield* planGrants(context.config, tx, task, needs, at);
  if (!plan.ok) {
    const { budget, reason, retryAt } = plan.refusal;
    const spec = budgetSpec(context.config, budget);
    if (spec?.kind === 'total') {
      yield* endAsHolder(context, tx, row, who, at, 'fail', 'failed', { reason: 'budget_exhausted', budget }, { errorClass: null, errorMessage: `budget ${budget} exhausted` });
      return { ok: false, error: 'budget', budget, message: `budget ${budget} cannot grant more to this ${spec.per}: the run ended failed (budget_exhausted)` };
    }
    return {
      ok: false,
      error: reason,
      budget,
      ...(retryAt === undefined ? {} : { retryAt }),
      message: retryAt === undefined ? `budget ${budget} cannot grant now` : `budget ${budget} holds enough again at ${retryAt}`,
    };
  }
  const reserved = yield* applyGrants(tx, who.taskId, who.generation, plan.grants, undefined, at);
  const seq = yield* tx.holderBumpEventSeq(fence(who, at));
  if (seq === undefined) return STALE_LEASE;
  yield* tx.eventAppend(who.taskId, seq, 'budget_reserved', at, JSON.stringify({ reserved }), who.workerId, who.generation);
  return { ok: true, reserved };
}

/** A1: the level of every budget row, at the queue clock's now (a rate bucket refilled to now, not written). */
export async function budgetLevels(context: QueueContext): Promise<BudgetLevel[]> {
  const at = now(context);
  const rows = await read(context, 'budgetLevels', (tx) => tx.budgetLevelList());
  return rows.flatMap((row) => levelView(context.config, row, at) ?? []);
}

export async function admissionDecisions(context: QueueContext): Promise<AdmissionRecord[]> {
  const rows = await read(context, 'admissionDecisions', (tx) => tx.admissionList());
  return rows.map((row) => {
    const record: AdmissionRecord = { at: row.at, action: row.action, reason: row.reason, tenant: row.tenant };
    if (row.task_id !== null) record.taskId = row.task_id;
    if (row.retry_at !== null) record.retryAt = row.retry_at;
    if (row.budget !== null) record.budget = row.budget;
    return record;
  });
}
