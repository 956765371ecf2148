/**
 * W1: claimable-work notices within one process. A transaction that makes a task claimable (an
 * enqueue, a retry or release back to ready, a confirmation to ready, a tenant's resume) marks itself
 * (`StoreTx.txMarkClaimable`); once it has committed, the store publishes one notice on the board of its
 * database, and every queue of this process open on the same database hears it, whichever connection
 * it holds. Other processes learn of it another way: PostgreSQL's NOTIFY, sent in the same transaction
 * (adapters/pg-listener.ts), or SQLite's `PRAGMA data_version`, which an idle worker reads on a short
 * interval (Worker, changeCheckMs).
 *
 * A notice is a hint, never a promise: it may come for a task another worker claims first, or for one a
 * savepoint rolled back, and it may not come at all (a listener added late). So a worker that hears one
 * claims and finds out, and one that hears none still polls, on a bounded interval.
 */
export interface NoticeBoard {
  /** Adds a listener; the function returned removes it. */
  subscribe(listener: () => void): () => void;
  /** Tells every listener, each once; a listener that throws is skipped, so a writer never fails for it. */
  publish(): void;
  readonly listeners: number;
}

class Board implements NoticeBoard {
  private readonly all = new Set<() => void>();

  get listeners(): number {
    return this.all.size;
  }

  subscribe(listener: () => void): () => void {
    // One entry per subscription, so the same function subscribed twice is removed one at a time.
    const entry = () => listener();
    this.all.add(entry);
    return () => {
      this.all.delete(entry);
    };
  }

  publish(): void {
    for (const listener of [...this.all]) {
      try {
        listener();
      } catch {
        // A wake-up that failed costs a poll interval at most; the commit it follows has happened.
      }
    }
  }
}

/** Boards by database: a file's absolute path, or the handle object of a database only it reaches (memory, PGlite). */
const BY_PATH = new Map<string, Board>();
const BY_OBJECT = new WeakMap<object, Board>();

/** The board of one database (created on first use). */
export function noticeBoardOf(database: string | object): NoticeBoard {
  if (typeof database === 'string') {
    let board = BY_PATH.get(database);
    if (board === undefined) BY_PATH.set(database, (board = new Board()));
    return board;
  }
  let board = BY_OBJECT.get(database);
  if (board === undefined) BY_OBJECT.set(database, (board = new Board()));
  return board;
}

/** A board of its own, for a store whose database no other queue of the process can reach. */
export function privateNoticeBoard(): NoticeBoard {
  return new Board();
}
