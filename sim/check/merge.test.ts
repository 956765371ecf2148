import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/dispatch.ts';
import { EXIT_LIVENESS, EXIT_USAGE } from '../cli/exit-codes.ts';
import { catalogueScenario } from '../scenarios/registry.ts';

/**
 * Issue 20 item 4: `leasehold merge` over the four shards of a check gives what one unsharded run of the
 * same seeds gives: the verdict (exit code), the per-scenario counts and the failing seeds; and it
 * refuses shards that are not the parts of one check.
 */
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-merge-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

type Summary = {
  exitCode: number;
  scenarios: { scenario: string; seeds: number; pass: number; safety: number; liveness: number; nondeterminism: number; marks: Record<string, number> }[];
  failures: { scenario: string; seed: string; verdict: string }[];
  runs: { scenario: string; seed: string; verdict: string; traceHash: string }[];
};
const read = (dir: string) => JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as Summary;

describe('leasehold merge', () => {
  // A scenario that fails on some seeds and passes on others: mixed, whose swarm turns duplicate
  // delivery on for some seeds only, with an expectation that every run has one (a liveness failure).
  const file = join(scratch, 'some-fail.json');
  const check = (extra: string[]) => ['check', '--scenario', file, '--scenario', 'poison-task', '--seeds', '12', '--seed', 'merge-test', '--jobs', '2', ...extra];
  let whole: Summary;
  const shards = [1, 2, 3, 4].map((k) => join(scratch, `shard-${k}`));

  beforeAll(async () => {
    const spec = structuredClone(catalogueScenario('mixed')) as unknown as Record<string, unknown>;
    spec.name = 'some-fail';
    spec.expect = [{ kind: 'mark', mark: 'duplicate_delivery', atLeast: 1 }];
    writeFileSync(file, JSON.stringify(spec));
    const unsharded = await cli(check(['--out', join(scratch, 'whole')]));
    whole = read(join(scratch, 'whole'));
    expect(unsharded.code).toBe(whole.exitCode);
    for (const [k, dir] of shards.entries()) {
      const result = await cli(check(['--shard', `${k + 1}/4`, '--out', dir]));
      expect([0, EXIT_LIVENESS]).toContain(result.code);
    }
  }, 600_000);

  it('gives the unsharded run\'s verdict, counts and failing seeds, and one JUnit report over every seed', async () => {
    // The test is only worth something if the run has both passing and failing seeds.
    expect(whole.failures.length).toBeGreaterThan(0);
    expect(whole.runs.filter((run) => run.verdict === 'pass').length).toBeGreaterThan(0);
    const out = join(scratch, 'merged');
    const junit = join(scratch, 'merged-junit.xml');
    // The shards in another order: the merge does not depend on it.
    const merged = await cli(['merge', shards[2]!, shards[0]!, shards[3]!, shards[1]!, '--out', out, '--junit', junit]);
    expect(merged.code).toBe(whole.exitCode);
    expect(merged.code).toBe(EXIT_LIVENESS);
    const summary = read(out);
    const counts = (s: Summary) => s.scenarios.map(({ scenario, seeds, pass, safety, liveness, nondeterminism }) => ({ scenario, seeds, pass, safety, liveness, nondeterminism }));
    expect(counts(summary)).toEqual(counts(whole));
    expect(summary.scenarios.map((row) => row.marks)).toEqual(whole.scenarios.map((row) => row.marks));
    const failing = (s: Summary) => s.failures.map((failure) => `${failure.scenario}/${failure.seed}/${failure.verdict}`);
    expect(failing(summary)).toEqual(failing(whole));
    expect(summary.runs.map((run) => `${run.scenario}/${run.seed}/${run.traceHash}`).sort()).toEqual(whole.runs.map((run) => `${run.scenario}/${run.seed}/${run.traceHash}`).sort());
    expect(merged.stdout).toMatch(/result: FAIL \(exit 2\)/);
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toContain(`tests="${whole.runs.length}"`);
    expect(xml).toContain(`failures="${whole.failures.length}"`);
    expect((xml.match(/<testcase /g) ?? []).length).toBe(whole.runs.length);
    const index = readFileSync(join(out, 'index.md'), 'utf8');
    expect(index).toMatch(/\| some-fail \| 12 \|/);
    expect(readFileSync(join(out, 'index.html'), 'utf8')).toContain('<table>');
  });

  it('refuses a missing shard, a shard given twice, and a shard of another root seed', async () => {
    const missing = await cli(['merge', shards[0]!, shards[1]!, shards[2]!, '--out', join(scratch, 'bad-1')]);
    expect(missing.code).toBe(EXIT_USAGE);
    expect(missing.stderr).toMatch(/shard 4\/4 missing: the merge needs all 4 shards/);
    const twice = await cli(['merge', shards[0]!, shards[0]!, shards[1]!, shards[2]!, shards[3]!, '--out', join(scratch, 'bad-2')]);
    expect(twice.code).toBe(EXIT_USAGE);
    expect(twice.stderr).toMatch(/shard 1\/4 is given twice/);
    const other = join(scratch, 'other-root');
    await cli(['check', '--scenario', 'poison-task', '--seeds', '2', '--seed', 'another', '--shard', '1/4', '--out', other]);
    const mixedRoots = await cli(['merge', shards[0]!, other, '--out', join(scratch, 'bad-3')]);
    expect(mixedRoots.code).toBe(EXIT_USAGE);
    expect(mixedRoots.stderr).toMatch(/is a shard of another check: its (root seed|seeds per scenario|scenario list)/);
    const nothing = await cli(['merge']);
    expect(nothing.code).toBe(EXIT_USAGE);
    expect((await cli(['merge', join(scratch, 'no-such-dir')])).stderr).toMatch(/summary\.json does not exist/);
  }, 120_000);
});

describe('leasehold check --budget (the default: seeds split by what each scenario finds), sharded and merged', () => {
  // Two cheap calibrated scenarios: supersede-stale-input still finds something now and then (a feature
  // one calibration seed reached), group-meal reaches the same five things every seed.
  const names = ['supersede-stale-input', 'group-meal'];
  const check = (extra: string[]) => ['check', ...names.flatMap((name) => ['--scenario', name]), '--budget', '8', '--seed', 'budget-test', '--jobs', '2', ...extra];
  type BudgetSummary = Summary & { seedsByScenario: Record<string, number> | null };
  const dir = (name: string) => join(scratch, `budget-${name}`);

  it('runs each scenario\'s own seeds, prints them, and four merged shards give the unsharded run', async () => {
    const whole = await cli(check(['--out', dir('whole')]));
    expect(whole.code).toBe(0);
    const summary = read(dir('whole')) as BudgetSummary;
    const split = summary.seedsByScenario!;
    expect(Object.keys(split)).toEqual(names);
    // Each keeps half its even share; the one that still finds something gets the rest of the time.
    expect(split['group-meal']).toBeGreaterThanOrEqual(4);
    expect(split['supersede-stale-input']).toBeGreaterThan(split['group-meal']! + 2);
    expect(summary.scenarios.map((row) => row.seeds)).toEqual(names.map((name) => split[name]));
    expect(whole.stdout).toContain(`seeds per scenario (scenarios/calibration/yield.json): supersede-stale-input ${split['supersede-stale-input']}, group-meal ${split['group-meal']}`);
    for (const k of [1, 2, 3, 4]) expect((await cli(check(['--shard', `${k}/4`, '--out', dir(`shard-${k}`)]))).code).toBe(0);
    const merged = await cli(['merge', dir('shard-1'), dir('shard-2'), dir('shard-3'), dir('shard-4'), '--out', dir('merged')]);
    expect(merged.code).toBe(0);
    const back = read(dir('merged')) as BudgetSummary;
    expect(back.seedsByScenario).toEqual(split);
    expect(back.scenarios.map((row) => [row.scenario, row.seeds, row.pass])).toEqual(summary.scenarios.map((row) => [row.scenario, row.seeds, row.pass]));
    expect(back.runs.map((run) => `${run.scenario}/${run.seed}/${run.traceHash}`).sort()).toEqual(summary.runs.map((run) => `${run.scenario}/${run.seed}/${run.traceHash}`).sort());
    // A shard of the even split of the same number is a shard of another check.
    await cli(['check', ...names.flatMap((name) => ['--scenario', name]), '--seeds', '8', '--seed', 'budget-test', '--shard', '4/4', '--out', dir('even-4')]);
    const mixedSplits = await cli(['merge', dir('shard-1'), dir('shard-2'), dir('shard-3'), dir('even-4'), '--out', dir('bad')]);
    expect(mixedSplits.code).toBe(EXIT_USAGE);
    expect(mixedSplits.stderr).toMatch(/is a shard of another check: its budget split is even, the first shard's .* is supersede-stale-input \d+, group-meal \d+/);
  }, 300_000);

  it('gives a scenario the calibration does not know (a scenario file) its even share, and says so', async () => {
    const spec = structuredClone(catalogueScenario('group-meal')) as unknown as Record<string, unknown>;
    spec.name = 'my-meal';
    const mine = join(scratch, 'my-meal.json');
    writeFileSync(mine, JSON.stringify(spec));
    const run = await cli(['check', '--scenario', mine, '--scenario', 'group-meal', '--budget', '4', '--seed', 'budget-test', '--jobs', '1', '--out', dir('file')]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('even share, not calibrated (a scenario file, or changed since npm run calibrate): my-meal');
    expect((read(dir('file')) as BudgetSummary).seedsByScenario).toMatchObject({ 'my-meal': 4 });
  }, 120_000);

  it('refuses --seeds with --budget, and --explore with --budget, before running anything', async () => {
    const both = await cli(['check', '--scenario', 'group-meal', '--seeds', '5', '--budget', '5']);
    expect(both.code).toBe(EXIT_USAGE);
    expect(both.stderr).toMatch(/--seeds gives every scenario the same seeds and --budget splits them by what each finds: give one of them/);
    const explore = await cli(['check', '--scenario', 'group-meal', '--budget', '5', '--explore', '50%']);
    expect(explore.code).toBe(EXIT_USAGE);
    expect(explore.stderr).toMatch(/--explore spends each scenario's even share/);
  });
});

