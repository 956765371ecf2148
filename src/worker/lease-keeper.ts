import type { Waiter } from '../ports.ts';
import { BusyError } from '../queue/errors.ts';
import type { ClaimedTask, WorkQueue } from '../queue/types.ts';

/**
 * Keeps one lease alive: a heartbeat every heartbeatMs while the run lasts (Q9). It records, for the
 * run to see at its next await, whether the lease was lost (R9) and whether a cancel was requested
 * (Q13). A busy database skips one beat; the lease is three beats long, so one miss costs nothing.
 */
export class LeaseKeeper {
  lost = false;
  cancelRequested: boolean;
  private stopped = false;

  constructor(
    private readonly queue: WorkQueue,
    private readonly waiter: Waiter,
    private readonly workerId: string,
    private readonly task: ClaimedTask,
    private readonly heartbeatMs: number,
    private readonly onLost: (during: string) => void,
  ) {
    this.cancelRequested = task.cancelRequested;
  }

  start(): void {
    void this.beat();
  }

  stop(): void {
    this.stopped = true;
  }

  /** Called when any fenced write of the run came back stale_lease. */
  markLost(during: string): void {
    if (this.lost) return;
    this.lost = true;
    this.onLost(during);
  }

  private async beat(): Promise<void> {
    while (!this.stopped && !this.lost) {
      await this.waiter.sleep(this.heartbeatMs);
      if (this.stopped || this.lost) return;
      let renewed;
      try {
        renewed = this.queue.heartbeat(this.task.id, this.workerId, this.task.generation);
      } catch (error) {
        if (error instanceof BusyError) continue;
        throw error;
      }
      if (!renewed.ok) this.markLost('heartbeat');
      else if (renewed.cancelRequested) this.cancelRequested = true;
    }
  }
}
