/**
 * Typed errors. A caller can tell every failure of the queue apart by class and by `code`, and none of
 * them leaves a partial write behind: each is thrown before, or instead of, a commit.
 */

export class LeaseholdError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A configuration value was out of range; `field` names it. Thrown by openWorkQueue. */
export class ConfigError extends LeaseholdError {
  readonly field: string;

  constructor(field: string, message: string) {
    super('invalid_config', `invalid config field '${field}': ${message}`);
    this.field = field;
  }
}

/**
 * SQLITE_BUSY persisted past the busy timeout and the bounded retries (Q18). Nothing was written: the
 * transaction never began or was rolled back, so the caller may retry the same call.
 */
export class BusyError extends LeaseholdError {
  readonly attempts: number;

  constructor(operation: string, attempts: number) {
    super('db_busy', `database busy: ${operation} gave up after ${attempts} attempt(s)`);
    this.attempts = attempts;
  }
}

/** An internal invariant did not hold. This is a bug in Leasehold, never a caller's mistake. */
export class InvariantError extends LeaseholdError {
  constructor(message: string) {
    super('invariant_violated', message);
  }
}

/**
 * The database could not be opened as a Leasehold queue; `path` names it and `reason` says why. Thrown
 * by openWorkQueue before anything is written: a file that is not a database, a folder that does not
 * exist, or a schema newer than this Leasehold knows is left exactly as it was.
 */
export class OpenError extends LeaseholdError {
  readonly path: string;
  readonly reason: 'not_a_database' | 'missing_folder' | 'newer_schema';

  constructor(path: string, reason: OpenError['reason'], message: string) {
    super('open_failed', `cannot open ${path}: ${message}`);
    this.path = path;
    this.reason = reason;
  }
}

/** The queue was used after close(). */
export class ClosedError extends LeaseholdError {
  constructor() {
    super('closed', 'the work queue is closed');
  }
}

/** An argument to a queue call was malformed; `field` names it. Nothing was written. */
export class InputError extends LeaseholdError {
  readonly field: string;

  constructor(field: string, message: string) {
    super('invalid_input', `${field} ${message}`);
    this.field = field;
  }
}
