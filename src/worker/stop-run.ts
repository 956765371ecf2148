/**
 * Thrown inside a run to end it without a terminal write: the lease is gone (R9) or the deadline
 * passed before a tool call (Q14). Caught by the run loop, never by callers.
 */
export class StopRun extends Error {
  constructor(
    readonly reason: 'lost_lease' | 'deadline',
    readonly during: string,
  ) {
    super(`run stopped (${reason}) during ${during}`);
    this.name = 'StopRun';
  }
}
