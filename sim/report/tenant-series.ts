import type { TaskEvent } from '../../src/queue/types.ts';
import { fairShareBound } from '../../src/queue/fair-share.ts';

/**
 * Per-tenant series of one drawn seed (issue 34 item 5): how many tasks each tenant had waiting
 * (ready) over time, replayed from the event log, and under fair share each tenant's weighted service
 * (S / w, from the judge's books, sim/checkers/i19-fair-share.ts) with I19's bound. Pure: no clock.
 */

export interface SeriesPoint {
  at: number;
  value: number;
}

export interface TenantSeries {
  tenant: string;
  points: SeriesPoint[];
}

export interface FairShareSeries {
  /** Each tenant's cumulative service divided by its weight (model tokens). */
  tenants: (TenantSeries & { weight: number; limit: number })[];
  /** C: the most service one run was charged in this run (the judge's books). */
  maxCharge: number;
  /**
   * The bound's fixed term in weighted units: the largest over pairs (a, b) of fairShareBound(C, L_a,
   * w_a, L_b, w_b) / (w_a x w_b), which is how far apart S_a / w_a and S_b / w_b may drift over an
   * interval in which both are backlogged and eligible, on top of where they stood when it began.
   */
  bound: number;
}

export interface TenantCharts {
  fromMs: number;
  toMs: number;
  depth: TenantSeries[];
  /** Tenants past MAX_SERIES, left out of the depth chart. */
  depthOmitted: number;
  fairShare?: FairShareSeries;
}

/** Series drawn per chart at most. */
export const MAX_SERIES = 10;
/** Points kept per series at most: past it, each of MAX_POINTS time buckets keeps its highest value. */
export const MAX_POINTS = 600;

/** Several points at one instant keep the last; past MAX_POINTS, one point per time bucket, its highest value. */
export function compact(points: readonly SeriesPoint[], fromMs: number, toMs: number): SeriesPoint[] {
  const out: SeriesPoint[] = [];
  for (const point of points) {
    const last = out[out.length - 1];
    if (last !== undefined && last.at === point.at) last.value = point.value;
    else out.push({ ...point });
  }
  if (out.length <= MAX_POINTS) return out;
  const span = Math.max(1, toMs - fromMs);
  const buckets = new Map<number, SeriesPoint>();
  for (const point of out) {
    const bucket = Math.min(MAX_POINTS - 1, Math.floor(((point.at - fromMs) / span) * MAX_POINTS));
    const seen = buckets.get(bucket);
    if (seen === undefined) buckets.set(bucket, { at: point.at, value: point.value });
    else seen.value = Math.max(seen.value, point.value);
  }
  return [...buckets.values()];
}

/** Tasks waiting (ready) per tenant after every event that changes a state, in commit order. */
export function depthSeries(events: readonly TaskEvent[], tenantOf: (taskId: number) => string, fromMs: number, toMs: number): { series: TenantSeries[]; omitted: number } {
  const state = new Map<number, string>();
  const depth = new Map<string, number>();
  const points = new Map<string, SeriesPoint[]>();
  for (const event of [...events].sort((a, b) => a.id - b.id)) {
    const to = event.data?.to;
    if (typeof to !== 'string') continue;
    const tenant = tenantOf(event.taskId);
    const before = state.get(event.taskId);
    state.set(event.taskId, to);
    const delta = (to === 'ready' ? 1 : 0) - (before === 'ready' ? 1 : 0);
    let mine = points.get(tenant);
    if (mine === undefined) points.set(tenant, (mine = [{ at: fromMs, value: 0 }]));
    if (delta === 0) continue;
    const value = (depth.get(tenant) ?? 0) + delta;
    depth.set(tenant, value);
    mine.push({ at: event.at, value });
  }
  const tenants = [...points.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { series: tenants.slice(0, MAX_SERIES).map((tenant) => ({ tenant, points: compact(points.get(tenant)!, fromMs, toMs) })), omitted: Math.max(0, tenants.length - MAX_SERIES) };
}

/** Weighted service per tenant from the judge's books, and the bound's fixed term in the same units. */
export function fairShareSeries(
  books: ReadonlyMap<string, readonly { at: number; service: number }[]>,
  maxCharge: number,
  weightOf: (tenant: string) => number,
  limitOf: (tenant: string) => number,
  fromMs: number,
  toMs: number,
): FairShareSeries {
  const names = [...books.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let bound = 0;
  for (let i = 0; i < names.length; i++) {
    for (let j = i + 1; j < names.length; j++) {
      const [a, b] = [names[i]!, names[j]!];
      const term = Number(fairShareBound(maxCharge, limitOf(a), weightOf(a), limitOf(b), weightOf(b))) / (weightOf(a) * weightOf(b));
      bound = Math.max(bound, term);
    }
  }
  const tenants = names.slice(0, MAX_SERIES).map((tenant) => {
    const weight = weightOf(tenant);
    const points = [{ at: fromMs, value: 0 }, ...books.get(tenant)!.map((point) => ({ at: point.at, value: point.service / weight }))];
    return { tenant, weight, limit: limitOf(tenant), points: compact(points, fromMs, toMs) };
  });
  return { tenants, maxCharge, bound };
}
