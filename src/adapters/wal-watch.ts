import { unlinkSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { wakeTokenOf } from './wake-token.ts';

/**
 * W1 on SQLite across processes, one process first: a store that commits work made claimable creates
 * a wake token, an empty file beside the database (`<file>-leasehold-wake`), once the commit is
 * visible (wake-token.ts wakeSignal). Every watcher of the database's folder hears the kernel's notice
 * of it (inotify, through fs.watch) and tries to delete it; the one whose delete succeeds tells its store's
 * workers, the others do nothing. So an idle fleet of N processes starts a new task with one claim,
 * not N claims at once on a machine's few cores (and on one write lock), and a commit that made
 * nothing claimable (a claim, a heartbeat, a run's end) wakes nobody.
 *
 * The rest of the fleet learns of every commit from the change counter (`PRAGMA data_version`), which
 * an idle worker reads every changeCheckMs (Worker, 25 ms), as it does where the file system sends no
 * notices: a token taken by a process whose workers are all busy, or by the writer's own process,
 * delays the task by that interval at most. The token is a hint: a lost one costs the same.
 *
 * A production adapter (it watches a real folder and makes a real file); the simulator has no folder to
 * watch and delivers its notices through the virtual loop (sim/store/fleet.ts). It watches the folder,
 * not the token, which comes and goes. Anything it cannot do (a file system without notices, too many
 * watches, a folder it may not write) leaves the counter's poll in charge: nothing is lost but speed.
 */
export class WakeWatcher {
  private watcher: FSWatcher | undefined;
  private readonly token: string;

  constructor(
    databasePath: string,
    private readonly changed: () => void,
  ) {
    this.token = wakeTokenOf(databasePath);
  }

  start(): void {
    if (this.watcher !== undefined) return;
    const name = basename(this.token);
    try {
      this.watcher = watch(dirname(this.token), { persistent: false }, (_event, file) => {
        if (file === null || file === name) this.take();
      });
      this.watcher.on('error', () => this.stop());
    } catch {
      this.watcher = undefined;
      return;
    }
    // A token no watcher took (none was running): its work waits, so this one takes it now.
    this.take();
  }

  stop(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  /** Deletes the token if it is there: the one watcher whose delete succeeds tells its store. */
  private take(): void {
    if (this.watcher === undefined) return;
    try {
      unlinkSync(this.token);
    } catch {
      // Not there: another watcher took it first, or this notice was of its delete.
      return;
    }
    this.changed();
  }
}
