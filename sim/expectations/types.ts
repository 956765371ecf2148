import type { z } from 'zod';
import type { WorldResult } from '../world.ts';

/** One expectation as a scenario file writes it: a `kind` and that kind's fields. */
export interface ExpectationSpec {
  kind: string;
  [field: string]: unknown;
}

/**
 * A kind of expectation: what a scenario says must be true of every run, checked like an invariant.
 * Each kind brings its own zod schema (the scenario file validator is built from them) and a pure
 * check of one finished run.
 */
export interface ExpectationKind<S extends { kind: string } = ExpectationSpec> {
  kind: S['kind'];
  /** How a failure is classed (S9): safety fails `check` with exit 1, liveness with exit 2. */
  class: 'safety' | 'liveness';
  /** One line for `--help`, reports and the README. */
  description: string;
  /** Validates the fields of one expectation of this kind, `kind` included. */
  schema: z.ZodType<S>;
  /** Returns one message per way the run fails the expectation; empty when it holds. */
  check(spec: S, run: WorldResult): string[];
}
