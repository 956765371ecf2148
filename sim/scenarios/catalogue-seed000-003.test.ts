import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readScenarioFile } from '../check/scenario-file.ts';
import { simulate } from '../run-scenario.ts';
import type { ScenarioSpec } from '../scenario.ts';

/**
 * The catalogue scenarios that reproduce seeds 000 and 003 (scenarios/*.json), run straight from their
 * files: every invariant and every expectation the file states must hold on each seed. Each file is
 * read as a scenario file is (its parts resolved into the runner's spec), straight from its path and
 * not through the catalogue's cache; `leasehold check` runs them over many more seeds.
 */

const SCENARIOS_DIR = join(import.meta.dirname, '..', '..', 'scenarios');

function readCatalogueScenario(name: string): ScenarioSpec {
  return readScenarioFile(join(SCENARIOS_DIR, `${name}.json`));
}

const CATALOGUE: { name: string; seed: string; seeds: number }[] = [
  { name: 'group-meal', seed: 'seed 000', seeds: 4 },
  { name: 'lease-expiry-uncertain', seed: 'seed 000', seeds: 4 },
  { name: 'supersede-stale-input', seed: 'seed 000', seeds: 4 },
  { name: 'queue-full', seed: 'seed 000', seeds: 4 },
  { name: 'aging-table', seed: 'seed 003', seeds: 4 },
  { name: 'concurrent-claimers', seed: 'seed 000', seeds: 3 },
];

describe('catalogue scenarios from seeds 000 and 003', () => {
  for (const { name, seed, seeds } of CATALOGUE) {
    it(`${name}: passes every invariant and expectation on seeds 1..${seeds}`, async () => {
      const spec = readCatalogueScenario(name);
      expect(spec.name).toBe(name);
      expect(spec.source.startsWith(seed)).toBe(true);
      expect(spec.description.length).toBeGreaterThan(0);
      expect(spec.expect?.length ?? 0).toBeGreaterThanOrEqual(4);
      for (let n = 1; n <= seeds; n++) {
        const { report } = await simulate({ scenario: spec, seed: String(n) });
        expect({ seed: n, violations: report.violations }).toEqual({ seed: n, violations: [] });
        expect(report.verdict).toBe('pass');
      }
    });
  }

  it('group-meal reproduces the article: group meal first after the article\'s 5 s wait, each next claim one run later, one candidate of the three paid reports', async () => {
    const { world } = await simulate({ scenario: readCatalogueScenario('group-meal'), seed: '11' });
    const claims = world.events.filter((event) => event.type === 'claimed');
    // The article's first wait; then each claim comes the moment the run before it ends (W1), one run of
    // 2.5 to 2.9 s later, where the article's worker polled every second while busy (8, 11, 14 s).
    const waits = claims.map((event) => event.data.queueWaitMs as number);
    expect(waits[0]).toBe(5_000);
    expect(waits.slice(1).map((wait, i) => wait - waits[i]!).every((gap) => gap >= 2_500 && gap <= 2_900)).toBe(true);
    expect(waits).toHaveLength(4);
    const label = (id: number) => world.enqueued.find(({ result }) => result.ok && result.taskId === id)?.arrival.label;
    expect(label(claims[0]!.taskId)).toBe('store-07/group-meal');
    const candidates = (world.incidents ?? []).filter((group) => group.taskIds.length >= 2);
    expect(candidates.map((group) => group.taskIds.map(label).sort())).toEqual([['store-07/group-meal', 'store-12/checkout-slow', 'store-31/status-not-refreshing']]);
  });

  it("aging-table reproduces seed 003's table at L1's claim: L1 11, H1 10, M1 7", async () => {
    const { world } = await simulate({ scenario: readCatalogueScenario('aging-table'), seed: '5' });
    const label = (id: number) => world.enqueued.find(({ result }) => result.ok && result.taskId === id)?.arrival.label;
    const claims = world.events.filter((event) => event.type === 'claimed');
    expect(claims.map((event) => [label(event.taskId), event.data.score])).toEqual([
      ['long-run', 30],
      ['L1', 11],
      ['H1', expect.any(Number)],
      ['M1', 15],
    ]);
  });
});
