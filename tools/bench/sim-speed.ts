/**
 * Simulator speed (issue: deterministic simulator). Runs seeds of the `mixed` scenario back to back on
 * one core and reports seeds per wall second and the time compression: simulated seconds per wall
 * second. Both are rates of the simulator against the wall clock, measured in one run; the wall clock
 * is read with process.hrtime (S1 forbids Date.now here).
 */
import { simulate } from '../../sim/run-scenario.ts';
import { catalogueScenario } from '../../sim/scenarios/registry.ts';
import { metric, type BenchContext, type BenchSection, type SectionResult } from './registry.ts';
import { ceilingsOf, profileShares, SHARES_HEADER, sharesText } from './cpu-share.ts';
import { recordSqlCalls, replaySqlCalls } from './sql-floor.ts';
import { elapsedNs, median, nowNs, sig } from './timing.ts';

// The turn-1 targets (100 seeds/s, 10,000x) asked for more than the SQL the SPEC requires allows, and
// are retired (issue 20): the rates stay as context, and the target is the simulator's share of its own
// SQL floor, simToSqlFloorRatio.
export const SEEDS_PER_SECOND_TARGET = { op: '>=', value: 0 } as const;
export const COMPRESSION_TARGET = { op: '>=', value: 0 } as const;
export const SIM_TO_SQL_FLOOR_TARGET = { op: '>=', value: 0.4 } as const;

export const simSpeedSection: BenchSection = {
  id: 'sim-speed',
  title: 'Simulator speed: mixed scenario, one core',
  async run(ctx: BenchContext): Promise<SectionResult> {
    const seedsPerRound = ctx.options.quick ? 10 : 40;
    const rounds = ctx.options.quick ? 3 : Math.max(3, Math.min(ctx.options.rounds, 7));
    const mixed = catalogueScenario('mixed');
    // Warm-up: module loading and JIT are not the simulator's steady state.
    for (let seed = 0; seed < 5; seed++) await simulate({ scenario: mixed, seed: `warm-${seed}` });
    const seedRates: number[] = [];
    const compressions: number[] = [];
    let verdicts = 0;
    for (let round = 0; round < rounds; round++) {
      let simulatedMs = 0;
      const start = nowNs();
      for (let i = 0; i < seedsPerRound; i++) {
        const { world, report } = await simulate({ scenario: mixed, seed: `bench-${round}-${i}` });
        simulatedMs += world.endMs - world.startMs;
        if (report.verdict !== 'pass') verdicts++;
      }
      const wallSeconds = elapsedNs(start) / 1e9;
      seedRates.push(seedsPerRound / wallSeconds);
      compressions.push(simulatedMs / 1000 / wallSeconds);
      ctx.progress(`  round ${round + 1}/${rounds}: ${(seedsPerRound / wallSeconds).toFixed(1)} seeds/s, ${(simulatedMs / 1000 / wallSeconds).toFixed(0)}x`);
      ctx.gc();
    }
    // The SQL floor: the statements the same seeds made SQLite run, replayed alone (sql-floor.ts). The
    // best of three replays against the median simulator round: how much of a seed is SQL, and the
    // seeds/s the SQL alone would allow if the simulator and the worker runtime cost nothing.
    const floorSeeds = ctx.options.quick ? 5 : 20;
    const { calls } = await recordSqlCalls(async () => {
      for (let i = 0; i < floorSeeds; i++) await simulate({ scenario: mixed, seed: `bench-0-${i}` });
    });
    const replays = [0, 1, 2].map(() => replaySqlCalls(calls));
    const best = replays.reduce((a, b) => (b.totalNs < a.totalNs ? b : a));
    const simNsPerSeed = 1e9 / median(seedRates);
    const sqlNsPerSeed = best.totalNs / floorSeeds;
    const writeNsPerSeed = best.inTransactionNs / floorSeeds;
    ctx.progress(`  SQL floor: ${(best.calls / floorSeeds).toFixed(0)} calls per seed, ${((100 * sqlNsPerSeed) / simNsPerSeed).toFixed(0)}% of a seed's time`);
    // The floor of the ratio itself: where the same seeds' CPU time goes (cpu-share.ts). A simulator that
    // cost nothing beyond the core it must run still spends (sql + core) of today's seed time.
    const cpu = await profileShares(async () => {
      for (let i = 0; i < floorSeeds; i++) await simulate({ scenario: mixed, seed: `bench-0-${i}` });
    });
    const ceiling = ceilingsOf(sqlNsPerSeed / simNsPerSeed, cpu);
    ctx.progress(`  CPU of a seed (${SHARES_HEADER}): ${sharesText(cpu)}; ratio ceiling with a free harness ${sig(ceiling.freeHarness, 3)}`);
    return {
      metrics: [
        metric('simSeedsPerSecond', 'mixed seeds per wall second on one core', median(seedRates), SEEDS_PER_SECOND_TARGET, seedRates),
        metric('simTimeCompression', 'simulated seconds per wall second', median(compressions), COMPRESSION_TARGET, compressions),
        metric(
          'simToSqlFloorRatio',
          "a mixed seed's SQL replayed alone ÷ the seed's wall time (the share of a seed that is its SQL; 1 would be a simulator that costs nothing)",
          sqlNsPerSeed / simNsPerSeed,
          SIM_TO_SQL_FLOOR_TARGET,
          seedRates.map((rate) => sqlNsPerSeed / (1e9 / rate)),
        ),
      ],
      context: [
        { label: 'seeds per round × rounds', value: `${seedsPerRound} × ${rounds}` },
        { label: 'seeds whose verdict was not pass', value: String(verdicts) },
        { label: 'SQL floor: statement calls per seed (replayed alone)', value: (best.calls / floorSeeds).toFixed(0) },
        { label: 'SQL floor ÷ simulator time per seed', value: sig(sqlNsPerSeed / simNsPerSeed, 3).toString() },
        { label: 'seeds/s the SQL alone allows (all calls)', value: sig(1e9 / sqlNsPerSeed, 3).toString() },
        { label: 'seeds/s the core\'s write transactions alone allow', value: sig(1e9 / writeNsPerSeed, 3).toString() },
        { label: `CPU of a mixed seed (${cpu.samples} samples of ${floorSeeds} seeds): ${SHARES_HEADER}`, value: sharesText(cpu) },
        { label: 'simToSqlFloorRatio ceiling: a simulator costing nothing beyond the core it runs, GC free too (ratio ÷ (SQL + core))', value: sig(ceiling.freeHarness, 3).toString() },
        { label: 'simToSqlFloorRatio ceiling keeping S6\'s history and hash and S7\'s checkers at today\'s cost (ratio ÷ (SQL + core + checkers + history))', value: sig(ceiling.keepingS6S7, 3).toString() },
        { label: 'simToSqlFloorRatio ceiling if the core\'s own JavaScript were free as well (ratio ÷ SQL): the SQL as the fleet runs it, in place', value: sig(ceiling.freeCore, 3).toString() },
      ],
      raw: {
        seedRates,
        compressions,
        seedsPerRound,
        rounds,
        sqlFloor: {
          seeds: floorSeeds,
          callsPerSeed: best.calls / floorSeeds,
          threwOnReplay: best.threw,
          replayNsPerSeed: replays.map((r) => Math.round(r.totalNs / floorSeeds)),
          inTransactionNsPerSeed: replays.map((r) => Math.round(r.inTransactionNs / floorSeeds)),
          simNsPerSeedMedian: Math.round(simNsPerSeed),
        },
        cpu,
      },
    };
  },
};
