/**
 * The counterexample file a failing property leaves behind (S9): the shrunk case, self-contained, in
 * reports/failures/<suite>-<hash>.json, and the one line that replays it.
 *
 * The file carries the scenario twice on purpose: `scenario` is the full ScenarioSpec (what a replay
 * loads as { scenario, seed, plan }), and `scenarioSpec` with `format` and `git` make it the same shape
 * `leasehold check` writes (sim/check/counterexample.ts), which today's `leasehold replay FILE.json`
 * already reads.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { canonicalJson } from '../sim/canonical-json.ts';
import { COUNTEREXAMPLE_FORMAT } from '../sim/check/counterexample.ts';
import { gitState } from '../sim/check/git.ts';
import { commandLine } from '../sim/cli/shell-quote.ts';
import type { FaultPlan } from '../sim/faults/plan.ts';
import type { Verdict, Violation } from '../sim/report-types.ts';
import type { ScenarioSpec } from '../sim/scenario.ts';

export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
export const FAILURES_DIR = join(REPO_ROOT, 'reports', 'failures');

export interface PropertyFailure {
  /** The property suite, e.g. 'safety'; the file is named after it. */
  suite: string;
  /** The property's name, as the test reports it. */
  property: string;
  scenario: ScenarioSpec;
  seed: string;
  plan: FaultPlan;
  verdict: Verdict;
  violations: Violation[];
  traceHash: string;
  /** How fast-check found and shrank it: enough to regenerate the same search with LEASEHOLD_SEED. */
  fastCheck?: { seed: number; path?: string; numRuns: number; numShrinks: number; shrinkInterrupted?: boolean };
}

export interface PropertyCounterexample extends PropertyFailure {
  format: typeof COUNTEREXAMPLE_FORMAT;
  replay: string;
  shrunk: true;
  scenarioSpec: ScenarioSpec;
  git: { commit: string | null; dirty: boolean };
}

/** `<suite>-<hash>`: the hash of the case itself, so the same shrunk case always gets the same file. */
export function counterexampleId(failure: Pick<PropertyFailure, 'suite' | 'scenario' | 'seed' | 'plan'>): string {
  const { scenario, seed, plan } = failure;
  const hash = createHash('sha256')
    .update(canonicalJson({ scenario, seed, plan } as never))
    .digest('hex')
    .slice(0, 12);
  return `${failure.suite.replace(/[^A-Za-z0-9_.-]/g, '_')}-${hash}`;
}

/** The path as a person at the repository root types it; absolute when the file is elsewhere. */
export function displayPath(path: string): string {
  const inside = relative(REPO_ROOT, path);
  return inside === '' || inside.startsWith('..') || isAbsolute(inside) ? path : inside;
}

export function replayCommand(path: string): string {
  return `leasehold ${commandLine(['replay', displayPath(path)])}`;
}

/** Writes the file (creating the directory) and returns its path and contents. */
export function writePropertyCounterexample(failure: PropertyFailure, directory: string = FAILURES_DIR): { path: string; counterexample: PropertyCounterexample } {
  const path = join(directory, `${counterexampleId(failure)}.json`);
  const git = gitState();
  const { scenario, plan, ...rest } = failure;
  // The verdict and the replay line first, for whoever opens the file; the bulk last.
  const counterexample: PropertyCounterexample = {
    format: COUNTEREXAMPLE_FORMAT,
    replay: replayCommand(path),
    shrunk: true,
    ...rest,
    git: { commit: git.commit ?? null, dirty: git.dirty },
    plan,
    scenario,
    scenarioSpec: scenario,
  };
  mkdirSync(directory, { recursive: true });
  writeFileSync(path, `${JSON.stringify(counterexample, null, 2)}\n`);
  return { path, counterexample };
}
