/**
 * Simulator speed (issue: deterministic simulator). Runs seeds of the `mixed` scenario back to back on
 * one core and reports seeds per wall second and the time compression: simulated seconds per wall
 * second. Both are rates of the simulator against the wall clock, measured in one run; the wall clock
 * is read with process.hrtime (S1 forbids Date.now here).
 */
import { simulate } from '../run-scenario.ts';
import { metric, type BenchContext, type BenchSection, type SectionResult } from './registry.ts';
import { elapsedNs, median, nowNs } from './timing.ts';

export const SEEDS_PER_SECOND_TARGET = { op: '>=', value: 100 } as const;
export const COMPRESSION_TARGET = { op: '>=', value: 10_000 } as const;

export const simSpeedSection: BenchSection = {
  id: 'sim-speed',
  title: 'Simulator speed: mixed scenario, one core',
  async run(ctx: BenchContext): Promise<SectionResult> {
    const seedsPerRound = ctx.options.quick ? 10 : 40;
    const rounds = ctx.options.quick ? 3 : Math.max(3, Math.min(ctx.options.rounds, 7));
    // Warm-up: module loading and JIT are not the simulator's steady state.
    for (let seed = 0; seed < 5; seed++) await simulate({ scenario: 'mixed', seed: `warm-${seed}` });
    const seedRates: number[] = [];
    const compressions: number[] = [];
    let verdicts = 0;
    for (let round = 0; round < rounds; round++) {
      let simulatedMs = 0;
      const start = nowNs();
      for (let i = 0; i < seedsPerRound; i++) {
        const { world, report } = await simulate({ scenario: 'mixed', seed: `bench-${round}-${i}` });
        simulatedMs += world.endMs - world.startMs;
        if (report.verdict !== 'pass') verdicts++;
      }
      const wallSeconds = elapsedNs(start) / 1e9;
      seedRates.push(seedsPerRound / wallSeconds);
      compressions.push(simulatedMs / 1000 / wallSeconds);
      ctx.progress(`  round ${round + 1}/${rounds}: ${(seedsPerRound / wallSeconds).toFixed(1)} seeds/s, ${(simulatedMs / 1000 / wallSeconds).toFixed(0)}x`);
      ctx.gc();
    }
    return {
      metrics: [
        metric('simSeedsPerSecond', 'mixed seeds per wall second on one core', median(seedRates), SEEDS_PER_SECOND_TARGET, seedRates),
        metric('simTimeCompression', 'simulated seconds per wall second', median(compressions), COMPRESSION_TARGET, compressions),
      ],
      context: [
        { label: 'seeds per round × rounds', value: `${seedsPerRound} × ${rounds}` },
        { label: 'seeds whose verdict was not pass', value: String(verdicts) },
      ],
      raw: { seedRates, compressions, seedsPerRound, rounds },
    };
  },
};
