/**
 * Side-by-side throughput measurement. Every contender gets a warm-up, then `rounds` timed slices; in
 * each round every contender runs one slice, in an order that rotates from round to round, so slow
 * phases of the shared machine hit all contenders alike. A figure is the median over rounds of the
 * per-round ratio of two contenders (paired), which cancels drift better than a ratio of medians.
 */
import type { BenchContext } from './registry.ts';
import { elapsedNs, median, nowNs } from './timing.ts';

export interface Contender {
  name: string;
  /** Untimed set-up before a slice of `n` operations (e.g. enqueue the n tasks the slice will consume). */
  prepare(n: number): void | Promise<void>;
  /**
   * Timed: run `n` operations. Must throw if any operation failed, so failures are never measured. A
   * contender whose operations return promises (the work queue, SPEC P2) awaits each one, so what it
   * pays for them is in its rate.
   */
  run(n: number): void | Promise<void>;
  /** Operations that completed and were checked ok, over the contender's life. */
  okCount(): number;
}

export interface InterleavedResult {
  /** Operations per slice after calibration. */
  opsPerSlice: Record<string, number>;
  /** Operations per second, one entry per round. */
  ratesPerRound: Record<string, number[]>;
  /** Execution order per round. */
  order: string[][];
  warmupRates: Record<string, number>;
}

async function timeSlice(ctx: BenchContext, c: Contender, n: number): Promise<number> {
  await c.prepare(n);
  ctx.gc();
  const start = nowNs();
  await c.run(n);
  const ns = elapsedNs(start);
  return (n * 1e9) / ns;
}

export async function runInterleaved(
  ctx: BenchContext,
  contenders: readonly Contender[],
  opts: { rounds: number; sliceMs: number; warmupMs: number; minOps?: number; maxOps?: number },
): Promise<InterleavedResult> {
  const minOps = opts.minOps ?? 200;
  const maxOps = opts.maxOps ?? 200_000;
  const opsPerSlice: Record<string, number> = {};
  const warmupRates: Record<string, number> = {};

  // Warm-up and calibration: growing batches until warmupMs of timed work, per contender.
  for (const c of contenders) {
    let n = 100;
    let spentNs = 0;
    let rate = 0;
    while (spentNs < opts.warmupMs * 1e6) {
      rate = await timeSlice(ctx, c, n);
      spentNs += (n * 1e9) / rate;
      n = Math.min(maxOps, n * 2);
    }
    warmupRates[c.name] = rate;
    opsPerSlice[c.name] = Math.max(minOps, Math.min(maxOps, Math.round((rate * opts.sliceMs) / 1000)));
    ctx.progress(`  warm-up ${c.name}: ~${Math.round(rate)} ops/s, ${opsPerSlice[c.name]} ops per slice`);
  }

  const ratesPerRound: Record<string, number[]> = {};
  for (const c of contenders) ratesPerRound[c.name] = [];
  const order: string[][] = [];
  for (let r = 0; r < opts.rounds; r++) {
    const k = contenders.length;
    const rotated = contenders.map((_, i) => contenders[(i + r) % k]!);
    // Every other round also reverses, so each contender runs both before and after each other one.
    const roundOrder = r % 2 === 1 ? rotated.reverse() : rotated;
    order.push(roundOrder.map((c) => c.name));
    for (const c of roundOrder) ratesPerRound[c.name]!.push(await timeSlice(ctx, c, opsPerSlice[c.name]!));
    ctx.progress(
      `  round ${r + 1}/${opts.rounds}: ` +
        contenders.map((c) => `${c.name} ${Math.round(ratesPerRound[c.name]![r]!)}/s`).join(', '),
    );
  }
  return { opsPerSlice, ratesPerRound, order, warmupRates };
}

/** Per-round ratios a[r] / b[r]. */
export function pairedRatios(a: readonly number[], b: readonly number[]): number[] {
  return a.map((x, i) => x / b[i]!);
}

export function medianRatio(a: readonly number[], b: readonly number[]): number {
  return median(pairedRatios(a, b));
}
