import type { Violation } from '../report-types.ts';
import type { WorldResult } from '../world.ts';

/**
 * A checker is a pure function of a finished run: its history and its final database (S7). It
 * returns the violations it found, each naming the invariant and the history entries involved.
 */
export interface Checker {
  invariant: string;
  kind: 'safety' | 'liveness';
  description: string;
  check(run: WorldResult): Violation[];
}
