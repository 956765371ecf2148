import type { Waiter } from '../ports.ts';
import { RetryableStoreError } from '../queue/errors.ts';
import type { ClaimedTask, StaleLease, WorkQueue } from '../queue/types.ts';
import { cancellableSleep, type CancellableSleep } from './sleep.ts';

const LOST: StaleLease = Object.freeze({ ok: false as const, error: 'stale_lease' as const, message: 'the run already lost its lease; the write was not sent' });

/**
 * Keeps one lease alive: a heartbeat every heartbeatMs while the run lasts (Q9). It records, for the
 * run to see at its next await, whether the lease was lost (R9) and whether a cancel was requested
 * (Q13). A busy database, a full disk or an I/O error (a RetryableStoreError) skips one beat; the lease is
 * three beats long, so one miss costs nothing.
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
  /** The sleep before the next heartbeat, let go of on stop(). */
  private sleeping: CancellableSleep | undefined;
  /** Whether a write of the lane is in flight, and the writes waiting for it, in order. */
  private sending = false;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly queue: WorkQueue,
    private readonly waiter: Waiter,
    private readonly workerId: string,
    private readonly task: ClaimedTask,
    private readonly heartbeatMs: number,
    private readonly onLost: (during: string) => void,
    /** A heartbeat failed with an error that is not store trouble (a closed queue, a bug in the core): the heartbeats end. */
    private readonly onHeartbeatError: (error: unknown) => void,
  ) {
    this.cancelRequested = task.cancelRequested;
  }

  start(): void {
    // Such an error ends the loop; it is reported, not left as an unhandled rejection, which would take
    // down the whole process with every run in it. The lease then lapses unless the run ends first, and
    // the run's next fenced write decides what follows (R9).
    void this.beat().catch((error: unknown) => this.onHeartbeatError(error));
  }

  stop(): void {
    this.stopped = true;
    // The beat's sleep ends now: a finished run leaves no heartbeat timer behind.
    this.sleeping?.cancel();
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
    // The usual case, nothing in flight, costs no more than the write's own promise.
    if (!this.sending) {
      this.sending = true;
      return this.send(during, send);
    }
    return new Promise((resolve, reject) => this.waiting.push(() => this.send(during, send).then(resolve, reject)));
  }

  /** One write of the lane, now: refused at once if the lease is known lost, else sent and its answer read. */
  private send<T>(during: string, send: () => Promise<T>): Promise<T | StaleLease> {
    if (this.lost) {
      this.next();
      return Promise.resolve(LOST);
    }
    let sent: Promise<T>;
    try {
      sent = send();
    } catch (error) {
      this.next();
      return Promise.reject(error);
    }
    return sent.then(
      (result) => {
        const answer = result as { ok?: boolean; error?: string } | undefined;
        if (answer?.ok === false && answer.error === 'stale_lease') this.markLost(during);
        this.next();
        return result;
      },
      (error: unknown) => {
        this.next();
        throw error;
      },
    );
  }

  /** The write in flight has been answered: start the next one waiting, if any. */
  private next(): void {
    const waiting = this.waiting.shift();
    if (waiting === undefined) this.sending = false;
    else waiting();
  }

  private async beat(): Promise<void> {
    while (!this.stopped && !this.lost) {
      this.sleeping = cancellableSleep(this.waiter, this.heartbeatMs);
      await this.sleeping.slept;
      if (this.stopped || this.lost) return;
      let renewed;
      try {
        renewed = await this.write('heartbeat', () => this.queue.heartbeat(this.task.id, this.workerId, this.task.generation));
      } catch (error) {
        if (error instanceof RetryableStoreError) continue;
        throw error;
      }
      if (renewed.ok) {
        if (renewed.cancelRequested) this.cancelRequested = true;
      }
    }
  }
}
