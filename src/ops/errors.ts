import { LeaseholdError } from '../queue/errors.ts';

/**
 * O1-O3: why an operator's command or a dashboard request did not do what it asked. Each code has an
 * exit code (the CLI) and an HTTP status (the dashboard's JSON API), so both fronts say the same thing
 * the same way, and none of them leaves a change behind: each is raised before, or instead of, a write.
 *
 *   invalid_input      a malformed argument (an id that is not a positive integer, an unknown state)   64  400
 *   not_found          no task with that id                                                             65  404
 *   refused            the queue said no (its own error in `queueError`: stale_generation, ...)        65  409
 *   missing_database   the SQLite file does not exist (a status never creates an empty queue)          66  503
 *   cannot_open        the file or server is not a Leasehold queue this version can open               66  503
 *   unreachable        the database server did not answer                                              69  503
 *   forbidden          an action without the token, from another origin, or on a read-only dashboard   -   403
 */
export type OpsErrorCode = 'invalid_input' | 'not_found' | 'refused' | 'missing_database' | 'cannot_open' | 'unreachable' | 'forbidden';

/** The exit codes of the operator's commands: 0 done, 64 bad usage (S9), and these (BSD sysexits.h). */
export const OPS_EXIT: Readonly<Record<Exclude<OpsErrorCode, 'forbidden'>, number>> = {
  invalid_input: 64,
  not_found: 65,
  refused: 65,
  missing_database: 66,
  cannot_open: 66,
  unreachable: 69,
};

export const OPS_HTTP_STATUS: Readonly<Record<OpsErrorCode, number>> = {
  invalid_input: 400,
  not_found: 404,
  refused: 409,
  missing_database: 503,
  cannot_open: 503,
  unreachable: 503,
  forbidden: 403,
};

export class OpsError extends LeaseholdError {
  declare readonly code: OpsErrorCode;
  /** For `refused`: the queue's own error (stale_generation, not_uncertain, already_terminal, ...). */
  readonly queueError: string | undefined;

  constructor(code: OpsErrorCode, message: string, options: { queueError?: string; cause?: unknown } = {}) {
    super(code, message);
    this.queueError = options.queueError;
    if (options.cause !== undefined) this.cause = options.cause;
  }

  /** The JSON body the dashboard answers with. */
  toJSON(): { error: OpsErrorCode; message: string; queueError?: string } {
    return this.queueError === undefined ? { error: this.code, message: this.message } : { error: this.code, message: this.message, queueError: this.queueError };
  }
}
