/** What one simulated run reports (SPEC: `run --json`). */
export type Verdict = 'pass' | 'safety' | 'liveness' | 'nondeterminism';

export interface Violation {
  /** Invariant id, e.g. 'I1'. */
  invariant: string;
  /** Safety invariants fail with exit 1, liveness ones with exit 2 (S9). */
  kind: 'safety' | 'liveness';
  message: string;
  /** History indexes of the offending operations, for the replay timeline. */
  at?: number[];
  taskId?: number;
}

export interface RunReport {
  scenario: string;
  seed: string;
  traceHash: string;
  verdict: Verdict;
  violations: Violation[];
  /** S8 coverage marks reached in this run, with counts. */
  marks: Record<string, number>;
  metrics: Record<string, number>;
}
