import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCounterexample } from '../check/counterexample.ts';
import { faultCount, type FaultPlan } from '../faults/plan.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { run, shrunkPath } from '../testing-harness.ts';
import { runCli } from './dispatch.ts';
import { EXIT_HARNESS, EXIT_OK, EXIT_SAFETY, EXIT_USAGE } from './exit-codes.ts';
import { withTasks, withTopics } from '../workloads/__test-helpers__/parts.ts';

/**
 * `leasehold shrink FILE.json` (T4) on a real failing counterexample, and `leasehold replay` of what it
 * wrote: the same invariant, the recorded hash, and the timeline of the task the violation names.
 */
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-shrink-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

/** mixed (its swarms of clients and faults) with a task L expected to end failed: it ends done, on sound code, in every seed. */
function impossible(): ScenarioSpec {
  const mixed = catalogueScenario('mixed');
  return {
    ...mixed,
    name: 'expects-the-impossible',
    workload: withTasks(withTopics(mixed.workload, 8), [{ atMs: 0, tenant: 'acme', topic: 'lunch', priority: 30, label: 'L' }]),
    expect: [{ kind: 'final-state', task: 'L', state: 'failed' }],
  };
}

let counterexample = '';
let recordedFaults = 0;
beforeAll(async () => {
  const failed = await run({ scenario: impossible(), seed: 2, out: join(scratch, 'failures') });
  counterexample = failed.file as string;
  recordedFaults = faultCount(readCounterexample(counterexample).plan as FaultPlan);
});

describe('leasehold shrink', () => {
  it('shrinks a failing counterexample, prints what it removed and the replay line, and the shrunk file replays to the same invariant', async () => {
    const result = await cli(['shrink', counterexample, '--max-runs', '20']);
    expect(result.code, result.stderr).toBe(EXIT_SAFETY);
    const out = shrunkPath(counterexample);
    const faults = /^faults: {5}(\d+) -> (\d+) \((\d+) removed\)$/m.exec(result.stdout);
    expect(faults, result.stdout).not.toBeNull();
    const [before, after] = [Number(faults![1]), Number(faults![2])];
    expect(before).toBe(recordedFaults);
    expect(after).toBeLessThanOrEqual(before);
    expect(after).toBe(0);
    expect(result.stdout).toMatch(/^tasks: {6}\d+ -> \d+ \(\d+ removed\)$/m);
    expect(result.stdout).toContain('workload:   topics 8 -> 1');
    expect(result.stdout).toMatch(/^invariant: {2}expect:final-state \(safety\) expect\[0\] final-state: task \d+ \('L'\) ended done, expected failed$/m);
    expect(result.stdout).toContain(`replay:     leasehold replay ${out}`);
    // Progress on stderr, one line per candidate.
    expect(result.stderr.split('\n').every((line) => line.startsWith('shrink: '))).toBe(true);
    expect(result.stderr).toMatch(/^shrink: run 2: workload topics 8 -> 1: still fails with expect:final-state, kept$/m);

    const shrunk = JSON.parse(readFileSync(out, 'utf8')) as { traceHash: string; violations: { invariant: string }[]; shrunk: { before: { faults: number } } };
    expect(shrunk.shrunk.before.faults).toBe(recordedFaults);
    const replay = await cli(['replay', out]);
    expect(replay.code).toBe(EXIT_SAFETY);
    expect(replay.stdout).toContain('verdict:    safety (recorded: safety)');
    expect(replay.stdout).toContain(`trace hash: ${shrunk.traceHash} (matches the recorded hash)`);
    expect(replay.stdout).toContain('fault plan: from the counterexample file (0 faults)');
    expect(replay.stdout).toMatch(/^ {2}expect:final-state \(safety\) expect\[0\] final-state: task (\d+) \('L'\) ended done, expected failed$/m);
    // The expectation's violation names its task only in the message: replay shows that task's timeline.
    const task = /final-state: task (\d+)/.exec(replay.stdout)![1];
    expect(replay.stdout).not.toContain('names no history entry and no task');
    expect(replay.stdout).toContain(`the timeline is centred on the last entry of task ${task} (named in its message)`);
    expect(replay.stdout).toContain(`timeline of task ${task} (named in the violation's message), its own entries`);
    expect(replay.stdout).toMatch(new RegExp(`^ {3}#\\d+ +\\+\\d+\\.\\d{3} w\\d#\\d +complete ok +task ${task} g\\d`, 'm'));
  });

  it('prints one JSON object with --json, and keeps what is left when the budget runs out', async () => {
    const out = join(scratch, 'budget.json');
    const result = await cli(['shrink', counterexample, '--out', out, '--max-runs', '1', '--json']);
    expect(result.code).toBe(EXIT_SAFETY);
    const printed = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(printed).toMatchObject({ reproduced: true, exhausted: true, exitCode: EXIT_SAFETY, invariant: 'expect:final-state', file: out, replay: `leasehold replay ${out}`, from: counterexample });
    expect(printed.after).toEqual(printed.before);
  });

  it('exits 3 when the file no longer fails as it recorded, and writes nothing', async () => {
    const recorded = JSON.parse(readFileSync(counterexample, 'utf8')) as { scenarioSpec: ScenarioSpec };
    recorded.scenarioSpec.expect = [];
    const changed = join(scratch, 'changed.json');
    writeFileSync(changed, JSON.stringify(recorded));
    const result = await cli(['shrink', changed]);
    expect(result.code).toBe(EXIT_HARNESS);
    expect(result.stdout).toBe(`shrink:     ${changed}: not reproduced (pass); nothing written`);
    // Expectations are judged after the run: the same trace as recorded, and no violation any more.
    expect(result.stderr.split('\n').at(-1)).toBe('leasehold: the case no longer fails with expect:final-state when run again: it ended pass');
    expect(() => readFileSync(shrunkPath(changed))).toThrow();
  });

  it('exits 64 on bad usage and bad files, before anything runs, and has help like every command', async () => {
    const cases: [string[], RegExp][] = [
      [['shrink'], /^leasehold: shrink needs a counterexample file \(FILE\.json\)\. Try: leasehold shrink /],
      [['shrink', join(scratch, 'missing.json')], /^leasehold: bad counterexample file .*missing\.json: cannot be read \(ENOENT\)\. Try: /],
      [['shrink', counterexample, '--invariant', 'I99'], /^leasehold: shrink: --invariant 'I99' is not among the file's violations \(expect:final-state\)\. Try: /],
      [['shrink', counterexample, '--out', counterexample], /^leasehold: shrink: --out is the counterexample being shrunk/],
      [['shrink', counterexample, '--max-runs', '0'], /^leasehold: --max-runs expects a whole number/],
      [['shrink', counterexample, 'another.json'], /^leasehold: unexpected argument 'another\.json' for shrink/],
      [['shrink', counterexample, '--store', 'mysql'], /^leasehold: --store expects one of sqlite, pglite, got 'mysql'/],
    ];
    for (const [argv, stderr] of cases) {
      const result = await cli(argv);
      expect({ argv, code: result.code }).toEqual({ argv, code: EXIT_USAGE });
      expect(result.stderr).toMatch(stderr);
      expect(result.stdout).toBe('');
    }
    const help = await cli(['shrink', '--help']);
    expect(help.code).toBe(EXIT_OK);
    for (const flag of ['FILE.json', '--out FILE.json', '--invariant ID', '--max-runs N', '--max-ms MS', '--store STORE', '--json']) expect(help.stdout).toContain(flag);
    expect((await cli(['--help'])).stdout).toMatch(/^ {2}shrink +shrink a counterexample/m);
  });
});
