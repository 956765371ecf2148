import { describe, expect, it } from 'vitest';
import type { Violation } from '../report-types.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { World, type WorldResult } from '../world.ts';
import { realRun } from './__test-helpers__/real-run.ts';
import { allCheckers } from './index.ts';
import { coverageMarks, REQUIRED_MARKS } from './marks.ts';

const mixed = catalogueScenario('mixed');

/** Seeds whose runs every checker must pass; the catalogue check below uses more. */
const CHECKED_SEEDS = 10;
/** Seeds whose marks together must reach every required mark (S8). */
const CATALOGUE_SEEDS = 30;

describe('checkers on real runs of the mixed scenario', () => {
  const runs: WorldResult[] = [];

  it(`runs ${CATALOGUE_SEEDS} seeds`, async () => {
    for (let seed = 1; seed <= CATALOGUE_SEEDS; seed++) runs.push(await new World(mixed, String(seed)).run());
    expect(runs.filter((run) => run.crash !== undefined).map((run) => run.seed)).toEqual([]);
  });

  it(`finds no violation in seeds 1..${CHECKED_SEEDS}`, () => {
    const found: string[] = [];
    for (const run of runs.slice(0, CHECKED_SEEDS)) {
      const violations: Violation[] = allCheckers.flatMap((checker) => checker.check(run));
      for (const violation of violations) {
        found.push(`seed ${run.seed} (replay: leasehold replay --scenario mixed --seed ${run.seed}): [${violation.kind}] ${violation.message}`);
      }
    }
    expect(found).toEqual([]);
  });

  it(`reaches every required coverage mark over seeds 1..${CATALOGUE_SEEDS}`, () => {
    const reached = new Set<string>();
    for (const run of runs) for (const [mark, count] of Object.entries(coverageMarks(run))) if (count > 0) reached.add(mark);
    expect(REQUIRED_MARKS.filter((mark) => !reached.has(mark))).toEqual([]);
  });

  it('finds no violation in a hand-driven fault-free run of the real queue either (the checkers judge the queue, not the harness)', async () => {
    const run = realRun({ globalLimit: 2, perTenantLimit: 1 });
    const a = (await run.enqueue({ tenant: 'acme', priority: 3 }))!;
    const b = (await run.enqueue({ tenant: 'globex', priority: 9 }))!;
    run.advance(1_000);
    await run.claim('w0#1', b);
    await run.claim('w1#1', a);
    await run.runToDone('w0#1', b);
    await run.runToDone('w1#1', a);
    const world = await run.build();
    expect(allCheckers.flatMap((checker) => checker.check(world)).map((violation) => violation.message)).toEqual([]);
  });
});
