import { describe, expect, it } from 'vitest';
import { junitXml } from './junit.ts';
import { Progress, duration } from './progress.ts';
import type { Job } from './seeds.ts';
import { summaryTable } from './summary.ts';
import { tally } from './tally.ts';
import type { JobResult } from './types.ts';

function result(id: number, seed: string, verdict: JobResult['verdict'], traceHash: string, repeat = false): JobResult {
  const job: Job = { id, scenario: 'mixed', index: id, seed, repeat };
  const violations = verdict === 'safety' ? [{ invariant: 'I1', kind: 'safety' as const, message: 'two holders of task <3> & "more"' }] : [];
  return { job, verdict, traceHash, violations, marks: { kill: verdict === 'pass' ? 1 : 0, pause: 0 }, metrics: {}, elapsedMs: 500 };
}

describe('check reporting', () => {
  it('counts verdicts per scenario, and moves a seed with two trace hashes to nondeterminism', () => {
    const results = [result(2, 'c', 'pass', 'h3'), result(0, 'a', 'pass', 'h1'), result(1, 'b', 'safety', 'h2'), result(3, 'a', 'pass', 'h1-other', true)];
    const counted = tally(['mixed'], results);
    expect(counted.scenarios[0]).toMatchObject({ seeds: 3, pass: 1, safety: 1, liveness: 0, nondeterminism: 1, marks: { kill: 2, pause: 0 } });
    expect(counted.mismatches.map((m) => [m.first.job.seed, m.hashA, m.hashB])).toEqual([['a', 'h1', 'h1-other']]);
    expect(counted.failures.map((f) => f.job.seed)).toEqual(['b']);
    expect(counted.unseedChecked).toBe(1);
    const table = summaryTable(counted, 1_500);
    expect(table[0]).toMatch(/^scenario\s+seeds\s+pass\s+safety\s+liveness\s+nondet\s+seeds\/s\s+marks reached$/);
    expect(table[2]).toMatch(/^mixed\s+3\s+1\s+1\s+0\s+1\s+2\.0\s+1\/2$/);
    expect(table.at(-1)).toMatch(/^total\s+3 .*\s2\.0\s+1\/2$/);
  });

  it('writes JUnit XML with a testcase per seed, a failure per violating seed and escaped messages', () => {
    const results = [result(0, 'a', 'pass', 'h1'), result(1, 'b', 'safety', 'h2'), result(2, 'c', 'nondeterminism', '')];
    const xml = junitXml({ results, mismatches: [], replayOf: (r) => `leasehold replay --scenario mixed --seed ${r.job.seed}` });
    expect(xml).toContain('<testsuites name="leasehold check" tests="3" failures="1" errors="1"');
    expect(xml.match(/<testcase /g)).toHaveLength(3);
    expect(xml).toContain('<failure type="safety" message="I1: two holders of task &lt;3&gt; &amp; &quot;more&quot;">');
    expect(xml).toContain('replay: leasehold replay --scenario mixed --seed b</failure>');
    expect(xml).toContain('<error type="nondeterminism"');
    const crashed = junitXml({ results: [], mismatches: [], replayOf: () => '', harnessError: 'thread 0 died' });
    expect(crashed).toContain('<testsuites name="leasehold check" tests="1" failures="0" errors="1"');
  });

  it('prints plain progress lines at most every few seconds, however many runs finish', () => {
    let nowMs = 0;
    const lines: string[] = [];
    const progress = new Progress(1_000, { tty: false, line: (text) => lines.push(text) }, () => nowMs);
    for (let run = 0; run < 1_000; run++) {
      nowMs += 100;
      progress.advance(run === 7);
    }
    // 100 s of runs: a line per tenth once five seconds passed since the last, and none at the very end.
    expect(lines.length).toBeGreaterThanOrEqual(9);
    expect(lines.length).toBeLessThanOrEqual(20);
    expect(lines[0]).toMatch(/^check: \d+\/1000 runs \(\d+%\) {2}10\.0 seeds\/s {2}ETA \d+:\d\d {2}1 failing$/);
    expect(duration(3_723)).toBe('1:02:03');
  });

  it('redraws one line on a terminal and keeps failure notes above it', () => {
    let nowMs = 0;
    let screen = '';
    const progress = new Progress(3, { tty: true, columns: 80, write: (text) => (screen += text) }, () => (nowMs += 200));
    progress.advance(false);
    progress.note('FAIL mixed seed 1');
    progress.advance(true);
    progress.advance(false);
    progress.finish();
    expect(screen).toContain('\r\x1b[KFAIL mixed seed 1\n');
    expect(screen).toContain('3/3 runs (100%)');
    expect(screen.endsWith('\r\x1b[K')).toBe(true);
    expect(screen.split('\n')).toHaveLength(2);
  });
});
