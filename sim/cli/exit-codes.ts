import type { Verdict } from '../report-types.ts';

/**
 * S9: what the process exit code of every `leasehold` command means. CI scripts branch on these
 * numbers, so they are a contract: add new ones, never renumber.
 */
export const EXIT_OK = 0;
/** A safety invariant failed (something that must never happen, happened). */
export const EXIT_SAFETY = 1;
/** A liveness invariant failed (the system did not drain within its bound). */
export const EXIT_LIVENESS = 2;
/** The same seed gave two different traces, or the harness itself crashed. */
export const EXIT_HARNESS = 3;
/** A required coverage mark was never reached, so a green run would have proved nothing. */
export const EXIT_COVERAGE = 4;
/** Bad usage or a bad scenario file (64 is EX_USAGE from BSD sysexits.h). */
export const EXIT_USAGE = 64;

export type ExitCode =
  | typeof EXIT_OK
  | typeof EXIT_SAFETY
  | typeof EXIT_LIVENESS
  | typeof EXIT_HARNESS
  | typeof EXIT_COVERAGE
  | typeof EXIT_USAGE;

const VERDICT_EXIT: Readonly<Record<Verdict, ExitCode>> = Object.freeze({
  pass: EXIT_OK,
  safety: EXIT_SAFETY,
  liveness: EXIT_LIVENESS,
  nondeterminism: EXIT_HARNESS,
});

/** The exit code a single run's verdict maps to. An unknown verdict is a harness defect, hence 3. */
export function exitCodeForVerdict(verdict: Verdict): ExitCode {
  return Object.hasOwn(VERDICT_EXIT, verdict) ? VERDICT_EXIT[verdict] : EXIT_HARNESS;
}
