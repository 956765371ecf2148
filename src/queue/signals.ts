import type { Step, StoreTx } from '../store/store.ts';
import { tenantLimitOf } from './config.ts';
import { now, read, type QueueContext } from './context.ts';
import type { Signals, SignalSummary } from './types.ts';

/**
 * A5: the control-plane signals, read at the queue clock's now. Cheap enough to call every second:
 * every part is an indexed, bounded read, never a scan of the history.
 *
 * - `decisions`, `rejections`, `retries`: running totals from `signal_counters`, each bumped in the
 *   transaction that wrote what it counts (an admission_decisions row: 'ACTION:reason'; a rejection
 *   row: reason; a retry, the fail -> ready edge: error class; a claim: RUN 'admitted').
 * - `depth` (ready tasks per tenant and priority) and `oldestWaiting` (per tenant, its oldest ready
 *   task by (enqueuedAt, id)): the ready index, bounded by the live count (capacity + headroom).
 * - `leases` (running tasks: holder, age since the claim, time left) and `awaitingReconciliation`
 *   (uncertain tasks): the holding index.
 * - `waitMs` (accepted to first claim) and `runMs` (last claim to the result): p50/p95/max over the
 *   window of the last SIGNALS_WINDOW accepted tasks by (enqueuedAt, id) (the enqueued_at index):
 *   waitMs over those of them ever claimed (firstClaimedAt - enqueuedAt), runMs over those of them
 *   finished after a claim (finishedAt - claimedAt). Percentiles are nearest-rank on integers; null
 *   when the window holds none.
 * - `alerts.stuckWhileCapacityNormal`: occupied slots (running + uncertain) are below globalLimit and
 *   some ready task that could take one has waited at least `stuckAfterMs` since it was accepted:
 *   its tenant is not paused and below its slot limit, its backoff (notBefore) has passed and its
 *   deadline has not. A paused tenant's waiting work never fires it.
 */
export const SIGNALS_WINDOW = 1_000;

export function signals(context: QueueContext): Promise<Signals> {
  const at = now(context);
  return read(context, 'signals', (tx) => signalsIn(context, tx, at));
}

export function* signalsIn(context: QueueContext, tx: StoreTx, at: number): Step<Signals> {
  const counters = yield* tx.signalList();
  const decisions: Signals['decisions'] = [];
  const rejections: Signals['rejections'] = [];
  const retries: Signals['retries'] = [];
  for (const { name, value } of counters) {
    const [kind, first, ...rest] = name.split(':');
    if (kind === 'decision' && first !== undefined) decisions.push({ action: first, reason: rest.join(':'), n: value });
    else if (kind === 'rejection' && first !== undefined) rejections.push({ reason: [first, ...rest].join(':'), n: value });
    else if (kind === 'retry' && first !== undefined) retries.push({ errorClass: [first, ...rest].join(':'), n: value });
  }
  const depth = (yield* tx.taskReadyDepth()).map((row) => ({ tenant: row.tenant, priority: row.priority, n: row.n }));
  const oldestWaiting = (yield* tx.taskOldestReady()).map((row) => ({ tenant: row.tenant, taskId: row.id, enqueuedAt: row.enqueued_at, waitedMs: at - row.enqueued_at }));
  const holding = yield* tx.taskHoldingSince();
  holding.sort((a, b) => a.id - b.id);
  const leases: Signals['leases'] = [];
  const occupied = new Map<string, number>();
  let awaitingReconciliation = 0;
  for (const row of holding) {
    occupied.set(row.tenant, (occupied.get(row.tenant) ?? 0) + 1);
    if (row.state === 'uncertain') {
      awaitingReconciliation += 1;
      continue;
    }
    leases.push({
      taskId: row.id,
      tenant: row.tenant,
      workerId: row.worker_id ?? '',
      generation: row.generation,
      ageMs: at - (row.claimed_at ?? at),
      expiresInMs: (row.lease_until ?? at) - at,
    });
  }
  const recent = yield* tx.taskListRecent(SIGNALS_WINDOW);
  const waits: number[] = [];
  const runs: number[] = [];
  for (const row of recent) {
    if (row.first_claimed_at !== null) waits.push(row.first_claimed_at - row.enqueued_at);
    if (row.finished_at !== null && row.claimed_at !== null) runs.push(row.finished_at - row.claimed_at);
  }
  const stuck = yield* stuckWhileCapacityNormal(context, tx, at, holding.length, occupied, depth);
  return {
    at,
    depth,
    decisions,
    leases,
    retries,
    awaitingReconciliation,
    waitMs: summarise(waits),
    runMs: summarise(runs),
    rejections,
    oldestWaiting,
    alerts: { stuckWhileCapacityNormal: stuck },
  };
}

function* stuckWhileCapacityNormal(
  context: QueueContext,
  tx: StoreTx,
  at: number,
  occupiedTotal: number,
  occupied: ReadonlyMap<string, number>,
  depth: Signals['depth'],
): Step<boolean> {
  const { config } = context;
  if (occupiedTotal >= config.globalLimit) return false;
  const paused = new Set((yield* tx.tenantPauseList()).map((row) => row.tenant));
  const tenants = [...new Set(depth.map((row) => row.tenant))];
  for (const tenant of tenants) {
    if (paused.has(tenant)) continue;
    const limit = tenantLimitOf(config, tenant);
    if ((occupied.get(tenant) ?? 0) >= limit) continue;
    const oldest = yield* tx.taskOldestEligibleReady(tenant, at);
    if (oldest !== undefined && at - oldest.enqueued_at >= config.stuckAfterMs) return true;
  }
  return false;
}

/** Nearest-rank percentiles of integer samples: the smallest value with at least q% of samples at or below it. */
export function summarise(samples: readonly number[]): SignalSummary {
  if (samples.length === 0) return { count: 0, p50: null, p95: null, max: null };
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (q: number) => sorted[Math.max(0, Math.ceil((q * sorted.length) / 100) - 1)]!;
  return { count: sorted.length, p50: rank(50), p95: rank(95), max: sorted[sorted.length - 1]! };
}
