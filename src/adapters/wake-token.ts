import { closeSync, openSync, utimesSync } from 'node:fs';

/**
 * W1 on SQLite across processes, the writer's side (the watchers' side is wal-watch.ts): the wake token
 * of a database file is an empty file beside it, `<file>-leasehold-wake`, there while a wake is untaken.
 * Loaded with the store, so a process that opens a queue, enqueues and exits at once still signals.
 */
export function wakeTokenOf(databasePath: string): string {
  return `${databasePath}-leasehold-wake`;
}

/**
 * After a commit that made a task claimable: creates the wake token (or, when an earlier one is still
 * untaken, sets its times, so the watchers hear of it again). A folder it cannot write costs nothing:
 * the other processes' counter poll still finds the commit.
 */
export function wakeSignal(databasePath: string): () => void {
  const token = wakeTokenOf(databasePath);
  return () => {
    try {
      closeSync(openSync(token, 'wx'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException | null)?.code !== 'EEXIST') return;
      try {
        const seconds = Date.now() / 1000; // allow-ambient: production adapter, the token's times the signal sets
        utimesSync(token, seconds, seconds);
      } catch {
        // Taken meanwhile: its watcher was told.
      }
    }
  };
}
