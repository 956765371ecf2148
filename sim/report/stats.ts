/**
 * Small, exact statistics for reports: nearest-rank percentiles over every sample (reports keep the
 * samples, a few numbers per task, so nothing is estimated), priority bands, and histogram bins.
 */

export interface Distribution {
  count: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

/**
 * Nearest-rank percentile of sorted values: the smallest value with at least p of the samples at or
 * below it (p50 of [1, 2, 3, 4] is 2, p95 of 1..100 is 95). Undefined for no samples.
 */
export function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  if (!(p >= 0 && p <= 1)) throw new RangeError(`percentile ${p} is not between 0 and 1`);
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[rank - 1];
}

/** p50, p95 and max of the samples, or undefined when there are none. */
export function distribution(samples: readonly number[]): Distribution | undefined {
  if (samples.length === 0) return undefined;
  const sorted = [...samples].sort((a, b) => a - b);
  return { count: sorted.length, p50Ms: percentile(sorted, 0.5)!, p95Ms: percentile(sorted, 0.95)!, maxMs: sorted[sorted.length - 1]! };
}

/**
 * How priorities are grouped in a report: one row per priority when the scenarios use a handful of
 * them (aging-table's 0, 10, 20), otherwise bands of ten (Q4 priorities run 0..30, so 30 joins 20-29).
 */
export const MAX_DISTINCT_PRIORITY_ROWS = 6;

export function priorityBanding(priorities: Iterable<number>): (priority: number) => string {
  const distinct = new Set(priorities);
  if (distinct.size <= MAX_DISTINCT_PRIORITY_ROWS) return (priority) => `priority ${priority}`;
  return (priority) => {
    const low = Math.min(20, Math.floor(priority / 10) * 10);
    return low === 20 ? 'priority 20-30' : `priority ${low}-${low + 9}`;
  };
}

/** Labels sort by their first number ('priority 2' before 'priority 10'), then as text. */
export function compareLabels(a: string, b: string): number {
  const na = Number(/-?\d+/.exec(a)?.[0] ?? Number.NaN);
  const nb = Number(/-?\d+/.exec(b)?.[0] ?? Number.NaN);
  if (Number.isFinite(na) && Number.isFinite(nb) && na !== nb) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Upper edges (exclusive) of the wait-time histogram's bins, in ms: human steps that stay readable
 * whether the waits are a second (an idle queue) or half an hour (a flood with aging). The last bin
 * takes everything longer.
 */
export const WAIT_BIN_EDGES_MS: readonly number[] = [
  250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000,
];

export interface HistogramBin {
  /** Inclusive lower edge and exclusive upper edge in ms; the last bin has no upper edge. */
  fromMs: number;
  toMs: number | null;
  count: number;
}

/** Counts samples into the bins of `edges`; every bin is returned, empty ones too, so axes line up. */
export function histogram(samples: readonly number[], edges: readonly number[] = WAIT_BIN_EDGES_MS): HistogramBin[] {
  const bins: HistogramBin[] = edges.map((edge, index) => ({ fromMs: index === 0 ? 0 : edges[index - 1]!, toMs: edge, count: 0 }));
  bins.push({ fromMs: edges[edges.length - 1] ?? 0, toMs: null, count: 0 });
  for (const sample of samples) {
    let index = edges.findIndex((edge) => sample < edge);
    if (index < 0) index = edges.length;
    bins[index]!.count++;
  }
  return bins;
}

/** `850 ms`, `12.3 s`, `4.5 min`, `1.2 h`. */
export function formatMs(ms: number | undefined | null): string {
  if (ms === undefined || ms === null) return '-';
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(ms)} ms`;
  if (abs < 120_000) return `${trim(ms / 1_000)} s`;
  if (abs < 7_200_000) return `${trim(ms / 60_000)} min`;
  return `${trim(ms / 3_600_000)} h`;
}

/** A bin's edge as a short label: `250ms`, `2s`, `1m`, `30m`. */
export function shortMs(ms: number): string {
  if (ms < 1_000) return `${ms}ms`;
  if (ms < 60_000) return `${trim(ms / 1_000)}s`;
  if (ms < 3_600_000) return `${trim(ms / 60_000)}m`;
  return `${trim(ms / 3_600_000)}h`;
}

function trim(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(1).replace(/\.0$/, '');
}

/** Adds `by` to a counter in a plain record (records serialise to JSON as they are). */
export function bump(record: Record<string, number>, key: string, by = 1): void {
  record[key] = (record[key] ?? 0) + by;
}

/** Sums counters into `into`. */
export function addCounts(into: Record<string, number>, from: Readonly<Record<string, number>>): void {
  for (const [key, value] of Object.entries(from)) bump(into, key, value);
}

/** Entries sorted by count (largest first), then key, for tables. */
export function byCount(record: Readonly<Record<string, number>>): [string, number][] {
  return Object.entries(record).sort(([ka, a], [kb, b]) => b - a || (ka < kb ? -1 : ka > kb ? 1 : 0));
}
