/**
 * The benchmark's extension point. A section is one self-contained measurement that produces ratios
 * against contenders it measured side by side in the same process (the machine is shared and noisy, so
 * a bare absolute time is never a target). `main.ts` runs the registered sections in order, prints one
 * table and writes reports/bench/latest.json.
 *
 * To add a section (for example a simulator-speed section): create `tools/bench/<name>.ts` exporting a
 * `BenchSection`, and append it to `defaultSections` in `sections.ts` (or call `registerSection`).
 */

export type TargetOp = '>=' | '<=';

export interface Target {
  op: TargetOp;
  value: number;
}

/** One reported figure: always a ratio of two contenders measured in the same run. */
export interface Metric {
  /** Stable key in latest.json, e.g. `claimCycleToRawSqliteRatio`. */
  id: string;
  /** What was divided by what, for the table. */
  label: string;
  value: number;
  target: Target;
  pass: boolean;
  /** Spread over rounds (min and max of the per-round ratios), to judge how noisy the figure is. */
  spread?: { min: number; max: number; rounds: number };
}

/** A line of context for the table: absolute rates and the like. Never a target. */
export interface ContextLine {
  label: string;
  value: string;
}

export interface SectionResult {
  metrics: Metric[];
  context: ContextLine[];
  /** Raw numbers (per-round samples etc.), written to latest.json as they are. */
  raw: Record<string, unknown>;
}

export interface BenchOptions {
  /** Timed rounds per contender (after warm-up). */
  rounds: number;
  /** Target wall time of one contender's slice in a throughput round, in ms. */
  sliceMs: number;
  /** Smaller workloads for a quick smoke run (figures are then indicative only). */
  quick: boolean;
}

export interface BenchContext {
  options: BenchOptions;
  /** A fresh temporary directory for this section's database files; removed after the section. */
  tmpDir: string;
  /** Progress on stderr. */
  progress(message: string): void;
  /** A full garbage collection if available (called between timed slices, never inside one). */
  gc(): void;
}

export interface BenchSection {
  id: string;
  title: string;
  run(ctx: BenchContext): Promise<SectionResult> | SectionResult;
}

const registry: BenchSection[] = [];

export function registerSection(section: BenchSection): void {
  if (registry.some((s) => s.id === section.id)) throw new Error(`bench section ${section.id} registered twice`);
  registry.push(section);
}

export function registeredSections(): readonly BenchSection[] {
  return registry;
}

export function metric(id: string, label: string, value: number, target: Target, samples?: number[]): Metric {
  const pass = Number.isFinite(value) && (target.op === '>=' ? value >= target.value : value <= target.value);
  const m: Metric = { id, label, value, target, pass };
  if (samples && samples.length > 0) {
    m.spread = { min: Math.min(...samples), max: Math.max(...samples), rounds: samples.length };
  }
  return m;
}
