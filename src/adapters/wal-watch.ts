import { utimesSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/** How long after a notice the counter is read again while it has not moved (1 + 2 + ... + 32 ms). */
const RECHECKS_MS = [1, 2, 4, 8, 16, 32];

/**
 * W1 on SQLite across processes: the kernel tells (inotify, through fs.watch) when the database's WAL
 * file changed, and the store's `PRAGMA data_version` says whether another connection committed since
 * the last look; only then are the watchers told. So an idle worker of one process starts work another
 * process enqueued within a few milliseconds, where the counter's own poll (Worker, changeCheckMs) takes
 * up to its interval. The WAL is written before its commit is visible to readers, so a notice whose
 * counter has not moved yet is read again a few times over the next 63 ms.
 *
 * A writer can say when its commit is visible: walSignal, below, which a Leasehold store calls after
 * each commit that made a task claimable, so a watcher learns of it at once instead of at its next
 * recheck (the WAL notice alone comes before the writer's sync, which can take milliseconds).
 *
 * A production adapter (it watches a real file and keeps real timers); the simulator has no file to
 * watch and delivers its notices through the virtual loop (sim/store/fleet.ts). It watches the folder,
 * not the file, so a WAL that is deleted (the last connection closed) and made again is still seen.
 * Anything it cannot do (a file system without notices, too many watches) leaves the counter's poll in
 * charge: nothing is lost but speed.
 */
export class WalWatcher {
  private watcher: FSWatcher | undefined;
  private last: number | undefined;
  private rechecking: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly databasePath: string,
    /** The store connection's PRAGMA data_version, or undefined when it cannot be read now. */
    private readonly counter: () => number | undefined,
    private readonly changed: () => void,
  ) {}

  start(): void {
    if (this.watcher !== undefined) return;
    const wal = `${basename(this.databasePath)}-wal`;
    this.last = this.counter();
    try {
      this.watcher = watch(dirname(this.databasePath), { persistent: false }, (_event, file) => {
        if (file === null || file === wal) this.check(0);
      });
      this.watcher.on('error', () => this.stop());
    } catch {
      this.watcher = undefined;
    }
  }

  stop(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.rechecking !== undefined) clearTimeout(this.rechecking);
    this.rechecking = undefined;
  }

  private check(attempt: number): void {
    if (this.watcher === undefined) return;
    const now = this.counter();
    if (now !== undefined && now !== this.last) {
      this.last = now;
      this.changed();
      return;
    }
    const delayMs = RECHECKS_MS[attempt];
    if (delayMs === undefined || this.rechecking !== undefined) return;
    this.rechecking = setTimeout(() => {
      // allow-ambient: production adapter, the recheck of a WAL notice
      this.rechecking = undefined;
      this.check(attempt + 1);
    }, delayMs);
    this.rechecking.unref?.();
  }
}

/**
 * W1 across processes, the writer's side: after a commit that made a task claimable, the store sets the
 * WAL file's times (utimes), which the kernel reports to every WalWatcher of the database's folder as
 * a change of the WAL, now that the commit is visible. SQLite reads neither time. A WAL that is not
 * there (no connection open in WAL mode) or cannot be touched (a read-only folder, another owner)
 * costs nothing: the watchers' rechecks and the counter's poll still find the commit.
 */
export function walSignal(databasePath: string): () => void {
  const wal = `${databasePath}-wal`;
  return () => {
    try {
      const seconds = Date.now() / 1000; // allow-ambient: production adapter, the WAL's times the signal sets
      utimesSync(wal, seconds, seconds);
    } catch {
      // Nothing to touch: the watchers' own rechecks remain.
    }
  };
}
