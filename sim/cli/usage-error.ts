/**
 * Bad usage (S9: exit 64). The message is one line that says what was wrong and what to type instead,
 * because the person reading it is usually halfway through a command and wants the fix, not a manual.
 *
 * Command modules may throw it too (for example for a bad scenario file); the dispatcher turns it into
 * exit 64 wherever it comes from.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';

  constructor(
    /** What was wrong, without a trailing full stop: "unknown flag --seeds-count". */
    readonly problem: string,
    /** A complete command line that would work: "leasehold check --seeds 100". */
    readonly tryInstead: string,
    /** The closest valid word, when there is one: "--seeds". */
    readonly didYouMean?: string,
  ) {
    super(problem);
  }

  /** The single line printed on stderr. */
  line(): string {
    const hint = this.didYouMean === undefined ? '' : ` Did you mean ${this.didYouMean}?`;
    return `leasehold: ${this.problem}.${hint} Try: ${this.tryInstead}`;
  }
}

export function isUsageError(error: unknown): error is UsageError {
  return error instanceof UsageError;
}
