import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseFlags } from '../cli/args.ts';
import { COMMANDS } from '../cli/command-specs.ts';
import { runCli } from '../cli/dispatch.ts';
import { EXIT_SAFETY } from '../cli/exit-codes.ts';
import { commandHelp } from '../cli/help.ts';
import { emptyPlan } from '../faults/plan.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { findScenario } from '../scenarios/registry.ts';
import { check } from '../testing-harness.ts';
import { failureDetector } from './bail.ts';
import type { JobResult } from './types.ts';
import { withTasks, withTopics } from '../workloads/__test-helpers__/parts.ts';

/**
 * `leasehold check --bail` (alias --fail-fast): after the first failing seed no further seed starts, the
 * running ones finish, and the summary, summary.json, JUnit and a merge of shards say how many seeds were
 * not run; coverage is not judged on a check that stopped. Without --bail every planned seed runs.
 */
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-bail-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * mixed's shape with four topics, one labelled task and no faults: a run that takes a blink. `fails`
 * plants a failure in every seed: task L is expected to end failed, and on sound code it never does
 * (expect:final-state, safety).
 */
function tiny(name: string, fails: boolean): ScenarioSpec {
  const mixed = findScenario('mixed') as ScenarioSpec;
  return structuredClone({
    ...mixed,
    name,
    workload: withTasks(withTopics(mixed.workload, 4), [{ atMs: 0, tenant: 'acme', topic: 'lunch', priority: 30, label: 'L' }]),
    faults: { plan: emptyPlan() },
    expect: fails ? [{ kind: 'final-state', task: 'L', state: 'failed' }] : [],
  });
}

function fileOf(spec: ScenarioSpec): string {
  const path = join(scratch, `${spec.name}.json`);
  writeFileSync(path, JSON.stringify(spec));
  return path;
}

function result(scenario: string, seed: string, options: { repeat?: boolean; verdict?: JobResult['verdict']; traceHash?: string; crash?: string } = {}): JobResult {
  return {
    job: { id: 0, scenario, index: 0, seed, repeat: options.repeat ?? false },
    verdict: options.verdict ?? 'pass',
    traceHash: options.traceHash ?? 'h',
    violations: [],
    marks: {},
    metrics: {},
    elapsedMs: 1,
    ...(options.crash === undefined ? {} : { crash: options.crash }),
  };
}

describe('leasehold check --bail', () => {
  it('stops at a failing first run, a crash, or two trace hashes for one seed, whichever of its runs arrives first', () => {
    expect(failureDetector()(result('a', '1'))).toBe(false);
    expect(failureDetector()(result('a', '1', { verdict: 'liveness' }))).toBe(true);
    expect(failureDetector()(result('a', '1', { verdict: 'nondeterminism', crash: 'boom' }))).toBe(true);
    for (const firstArrives of [true, false]) {
      const differs = failureDetector();
      const runs = [result('a', '1', { traceHash: 'h1' }), result('a', '1', { repeat: true, traceHash: 'h2' })];
      if (!firstArrives) runs.reverse();
      expect(runs.map((run) => differs(run))).toEqual([false, true]);
      const same = failureDetector();
      expect([result('a', '1'), result('a', '1', { repeat: true })].map((run) => same(run))).toEqual([false, false]);
    }
    // Another seed's repeat is not compared with this seed's first run.
    const detector = failureDetector();
    expect([result('a', '1', { traceHash: 'h1' }), result('a', '2', { repeat: true, traceHash: 'h2' })].map((run) => detector(run))).toEqual([false, false]);
  });

  it('is a flag of check, --fail-fast its alias, both in --help', () => {
    expect(parseFlags(COMMANDS.check, ['--bail']).toJSON().flags).toEqual({ bail: true });
    expect(parseFlags(COMMANDS.check, ['--fail-fast']).toJSON().flags).toEqual({ bail: true });
    expect(commandHelp(COMMANDS.check)).toMatch(/^ {2}--bail, --fail-fast +stop after the first failing seed/m);
    expect(COMMANDS.check.synopsis).toContain('[--bail]');
  });

  it('stops handing out seeds after the first failure and says how many were not run; without it every seed runs', async () => {
    // Planned seed-major: pass #0, fail #0, pass #1, fail #1, ...; on one thread the check stops at fail #0.
    const scenarios = [tiny('bail-pass', false), tiny('bail-fail', true)];
    const lines: string[] = [];
    const out = join(scratch, 'bailed');
    const bailed = await check({ scenarios, seeds: 4, seed: 'bail-test', jobs: 1, unseedRate: 0, bail: true, out, junit: join(out, 'junit.xml'), output: { out: (text) => lines.push(text), err: () => {} } });
    expect(bailed.exitCode).toBe(EXIT_SAFETY);
    expect(bailed.total.seeds).toBe(2);
    expect(bailed.runs.map((run) => `${run.scenario} #${run.index}`)).toEqual(['bail-pass #0', 'bail-fail #0']);
    expect(bailed.bail).toMatchObject({ stopped: true, after: { scenario: 'bail-fail', index: 0, verdict: 'safety' }, seedsPlanned: 8, seedsNotRun: 6, notRunByScenario: { 'bail-pass': 3, 'bail-fail': 3 } });
    expect(bailed.coverage).toMatchObject({ enforced: false, reason: 'the check stopped after its first failure (--bail) with 6 of 8 seeds not run' });
    expect(bailed.command).toContain('--bail');
    expect(lines).toContainEqual(expect.stringMatching(/^stopped after the first failure \(--bail, at bail-fail seed \d+\): 6 of 8 seeds not run; coverage not judged$/));
    expect(lines.at(-3)).toBe('result: FAIL (exit 1): 1 safety; stopped after the first failure: 6 of 8 seeds not run');
    const junit = readFileSync(join(out, 'junit.xml'), 'utf8');
    expect(junit.match(/name="3 seed\(s\) not run"[^>]*>\s*<skipped message="not run: the check stopped after its first failure \(--bail\)"\/>/g)).toHaveLength(2);

    const full = await check({ scenarios, seeds: 4, seed: 'bail-test', jobs: 1, unseedRate: 0 });
    expect(full.exitCode).toBe(EXIT_SAFETY);
    expect(full.total.seeds).toBe(8);
    expect(full.failures).toHaveLength(4);
    expect(full.bail).toBeNull();
    // The lowest failing seed is the same with and without --bail: every seed planned before it ran.
    expect(bailed.failures[0]?.seed).toBe(full.failures[0]?.seed);
  }, 120_000);

  it('a check that ran with --bail and found nothing ran every seed and judged coverage as usual', async () => {
    const passed = await check({ scenarios: [tiny('bail-all-pass', false)], seeds: 2, seed: 'bail-test', jobs: 1, unseedRate: 0, bail: true });
    expect(passed.exitCode).toBe(0);
    expect(passed.total.seeds).toBe(2);
    expect(passed.bail).toEqual({ stopped: false, after: null, seedsPlanned: 2, seedsNotRun: 0, notRunByScenario: {}, repeatsNotRun: 0 });
    expect(passed.coverage.enforced).toBe(false);
    expect(passed.coverage).not.toHaveProperty('reason', expect.stringContaining('--bail'));
  }, 60_000);

  it('a merge of shards that stopped sums what they did not run and does not judge coverage', async () => {
    const pass = fileOf(tiny('bail-shard-pass', false));
    const fail = fileOf(tiny('bail-shard-fail', true));
    const dirs = [1, 2].map((k) => join(scratch, `shard-${k}`));
    for (const [k, dir] of dirs.entries()) {
      const ran = await runCli(['check', '--scenario', pass, '--scenario', fail, '--seeds', '4', '--seed', 'bail-test', '--jobs', '1', '--unseed-rate', '0', '--fail-fast', '--shard', `${k + 1}/2`, '--out', dir], { out: () => {}, err: () => {} });
      expect(ran).toBe(EXIT_SAFETY);
    }
    const lines: string[] = [];
    const merged = join(scratch, 'merged');
    expect(await runCli(['merge', ...dirs, '--out', merged], { out: (text) => lines.push(text), err: () => {} })).toBe(EXIT_SAFETY);
    const summary = JSON.parse(readFileSync(join(merged, 'summary.json'), 'utf8')) as { bail: unknown; coverage: { enforced: boolean; reason: string } };
    // Each shard planned 4 seeds (indexes 0, 2 or 1, 3 of both scenarios) and stopped at its first failing one, the second.
    expect(summary.bail).toMatchObject({ stopped: true, seedsPlanned: 8, seedsNotRun: 4, notRunByScenario: { 'bail-shard-pass': 2, 'bail-shard-fail': 2 } });
    expect(summary.coverage).toEqual({ enforced: false, required: expect.any(Array), reason: 'a shard stopped after its first failure (--bail) with 4 of 8 seeds not run' });
    expect(lines).toContain('result: FAIL (exit 1): 2 safety; stopped after the first failure: 4 of 8 seeds not run');
    expect(lines).toContainEqual(expect.stringMatching(/^stopped after the first failure \(--bail, at bail-shard-fail seed \d+\): 4 of 8 seeds not run; coverage not judged$/));
  }, 120_000);
});
