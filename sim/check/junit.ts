import type { JobResult } from './types.ts';
import type { UnseedMismatch } from './tally.ts';

/** What the JUnit report needs beyond the results: how to name and replay each seed. */
export interface JunitInput {
  results: readonly JobResult[];
  mismatches: readonly UnseedMismatch[];
  /** The replay command printed in each failure's body. */
  replayOf(result: JobResult): string;
  /** A harness death to report as an error of the run as a whole. */
  harnessError?: string;
  /** The database the worlds ran on (a property of every suite), and the scenarios it could not run (each a skipped testcase). */
  store?: string;
  skipped?: readonly { scenario: string; reason: string }[];
  /** --bail: per scenario, the seeds a check that stopped after its first failure did not run (each scenario's are one skipped testcase). */
  notRun?: Readonly<Record<string, number>>;
}

/**
 * A JUnit XML report for CI systems: one testsuite per scenario, one testcase per seed. A safety or
 * liveness verdict is a <failure>; a crash or a nondeterministic seed is an <error>, as JUnit means
 * "the test could not be judged".
 */
export function junitXml(input: JunitInput): string {
  const firstRuns = input.results.filter((result) => !result.job.repeat).sort((a, b) => a.job.id - b.job.id);
  const mismatchBySeed = new Map(input.mismatches.map((mismatch) => [`${mismatch.first.job.scenario}\u0000${mismatch.first.job.seed}`, mismatch]));
  const suites = new Map<string, string[]>();
  const counts = new Map<string, { tests: number; failures: number; errors: number; seconds: number }>();
  for (const result of firstRuns) {
    const { scenario, seed } = result.job;
    const mismatch = mismatchBySeed.get(`${scenario}\u0000${seed}`);
    const count = counts.get(scenario) ?? { tests: 0, failures: 0, errors: 0, seconds: 0 };
    const seconds = result.elapsedMs / 1000;
    count.tests++;
    count.seconds += seconds;
    const body: string[] = [];
    if (result.verdict === 'safety' || result.verdict === 'liveness') {
      count.failures++;
      const message = result.violations[0] === undefined ? result.verdict : `${result.violations[0].invariant}: ${result.violations[0].message}`;
      body.push(`      <failure type="${result.verdict}" message="${escape(firstLine(message))}">${escape(details(result, input.replayOf(result)))}</failure>`);
    } else if (result.verdict !== 'pass' || mismatch !== undefined) {
      count.errors++;
      const message = mismatch !== undefined ? `I14: two trace hashes, ${mismatch.hashA} and ${mismatch.hashB}` : result.crash !== undefined ? 'harness crash' : 'nondeterminism';
      body.push(`      <error type="nondeterminism" message="${escape(message)}">${escape(details(result, input.replayOf(result)))}</error>`);
    }
    const testcase = `    <testcase classname="leasehold.check.${escape(scenario)}" name="seed ${escape(seed)}" time="${seconds.toFixed(3)}"`;
    const lines = suites.get(scenario) ?? [];
    lines.push(body.length === 0 ? `${testcase}/>` : `${testcase}>\n${body.join('\n')}\n    </testcase>`);
    suites.set(scenario, lines);
    counts.set(scenario, count);
  }
  for (const skip of input.skipped ?? []) {
    const count = counts.get(skip.scenario) ?? { tests: 0, failures: 0, errors: 0, seconds: 0 };
    count.tests++;
    counts.set(skip.scenario, count);
    const lines = suites.get(skip.scenario) ?? [];
    lines.push(`    <testcase classname="leasehold.check.${escape(skip.scenario)}" name="on ${escape(input.store ?? 'sqlite')}" time="0.000">\n      <skipped message="${escape(skip.reason)}"/>\n    </testcase>`);
    suites.set(skip.scenario, lines);
  }
  for (const [scenario, seeds] of Object.entries(input.notRun ?? {})) {
    if (seeds <= 0) continue;
    const count = counts.get(scenario) ?? { tests: 0, failures: 0, errors: 0, seconds: 0 };
    count.tests++;
    counts.set(scenario, count);
    const lines = suites.get(scenario) ?? [];
    lines.push(`    <testcase classname="leasehold.check.${escape(scenario)}" name="${seeds} seed(s) not run" time="0.000">\n      <skipped message="not run: the check stopped after its first failure (--bail)"/>\n    </testcase>`);
    suites.set(scenario, lines);
  }
  const skippedOf = (scenario: string) => (input.skipped ?? []).filter((skip) => skip.scenario === scenario).length + ((input.notRun?.[scenario] ?? 0) > 0 ? 1 : 0);
  const storeProperty = input.store === undefined ? [] : [`    <properties><property name="store" value="${escape(input.store)}"/></properties>`];
  const totals = [...counts.values()].reduce((sum, c) => ({ tests: sum.tests + c.tests, failures: sum.failures + c.failures, errors: sum.errors + c.errors, seconds: sum.seconds + c.seconds }), { tests: 0, failures: 0, errors: 0, seconds: 0 });
  const harness = input.harnessError === undefined ? [] : [
    '  <testsuite name="harness" tests="1" failures="0" errors="1">',
    `    <testcase classname="leasehold.check" name="worker threads"><error type="harness" message="a worker thread died">${escape(input.harnessError)}</error></testcase>`,
    '  </testsuite>',
  ];
  const harnessTests = input.harnessError === undefined ? 0 : 1;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="leasehold check" tests="${totals.tests + harnessTests}" failures="${totals.failures}" errors="${totals.errors + harnessTests}" time="${totals.seconds.toFixed(3)}">`,
    ...[...suites].flatMap(([scenario, lines]) => {
      const c = counts.get(scenario) as { tests: number; failures: number; errors: number; seconds: number };
      const skippedAttribute = skippedOf(scenario) > 0 ? ` skipped="${skippedOf(scenario)}"` : '';
      return [`  <testsuite name="${escape(scenario)}" tests="${c.tests}" failures="${c.failures}" errors="${c.errors}"${skippedAttribute} time="${c.seconds.toFixed(3)}">`, ...storeProperty, ...lines, '  </testsuite>'];
    }),
    ...harness,
    '</testsuites>',
    '',
  ].join('\n');
}

function details(result: JobResult, replay: string): string {
  const lines = result.violations.map((violation) => `${violation.invariant} (${violation.kind}): ${violation.message}`);
  if (result.crash !== undefined) lines.push(`harness crash: ${result.crash}`);
  lines.push(`trace hash: ${result.traceHash}`, `replay: ${replay}`);
  return lines.join('\n');
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? '';
}

/** XML text and attribute escaping; control characters other than tab and newline are not allowed in XML 1.0. */
function escape(text: string): string {
  return text
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}
