import type { Waiter } from '../ports.ts';
import { BusyError } from '../queue/errors.ts';
import type { ClaimedTask, StaleLease, WorkQueue } from '../queue/types.ts';

const LOST: StaleLease = Object.freeze({ ok: false as const, error: 'stale_lease' as const, message: 'the run already lost its lease; the write was not sent' });

/**
 * Keeps one lease alive: a heartbeat every heartbeatMs while the run lasts (Q9). It records, for the
 * run to see at its next await, whether the lease was lost (R9) and whether a cancel was requested
 * (Q13). A busy database skips one beat; the lease is three beats long, so one miss costs nothing.
 *
 * Every fenced write of the run, heartbeats included, goes through one lane (`write`): one at a time,
 * each sent only while the lease is not known to be lost, and each refusal marked before the next
 * write starts. The queue answers through a promise, so without the lane a heartbeat and a tool's
 * error delivered in the same instant could both be sent, and both refused, after the lease moved on.
 */
export class LeaseKeeper {
  lost = false;
  cancelRequested: boolean;
  private stopped = false;
  private lane: Promise<unknown> = Promise.resolve();

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

  /**
   * Sends one fenced write in the lane. Once the lease is known lost nothing more is sent (R9): the
   * write is answered stale_lease without reaching the queue.
   */
  write<T>(during: string, send: () => Promise<T>): Promise<T | StaleLease> {
    const turn = this.lane.then(async () => {
      if (this.lost) return LOST;
      const result = await send();
      const answer = result as { ok?: boolean; error?: string } | undefined;
      if (answer?.ok === false && answer.error === 'stale_lease') this.markLost(during);
      return result;
    });
    this.lane = turn.catch(() => undefined);
    return turn;
  }

  private async beat(): Promise<void> {
    while (!this.stopped && !this.lost) {
      await this.waiter.sleep(this.heartbeatMs);
      if (this.stopped || this.lost) return;
      let renewed;
      try {
        renewed = await this.write('heartbeat', () => this.queue.heartbeat(this.task.id, this.workerId, this.task.generation));
      } catch (error) {
        if (error instanceof BusyError) continue;
        throw error;
      }
      if (renewed.ok) {
        if (renewed.cancelRequested) this.cancelRequested = true;
      }
    }
  }
}
