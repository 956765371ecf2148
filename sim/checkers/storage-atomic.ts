import type { HistoryEntry, NoteEntry } from '../history.ts';
import type { WorldResult } from '../world.ts';
import { ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/** The codes a call that met a full disk or an I/O error is recorded failed with (src's StorageError codes, restated). */
export const STORAGE_FAILURE_REASONS: ReadonlySet<string> = new Set(['disk_full', 'io_error']);

interface FailedNote {
  code?: string;
  inTransaction?: boolean;
  sql?: string;
}

interface RollbackNote {
  code?: string;
  before?: number;
  after?: number;
  inTransaction?: boolean;
}

/**
 * Q18 (with issue 15): a write the storage refused (a full disk, an I/O error, faults/disk-full.ts and
 * faults/io-error.ts) leaves nothing half-written, and its caller is told. Judged from what the storage
 * beneath the store noted (sim/store/storage-faults.ts) and from the history:
 *
 * - every write statement that failed with a storage code ran inside a transaction (`in-transaction`):
 *   a statement on its own commits what came before it in the same call, and cannot be undone;
 * - every failed statement ended its transaction by a rollback before the next write failed
 *   (`rolled-back`): a failure that was caught and went on lets the rest of the transaction commit;
 * - every rolled-back transaction left the event log where it was (`no-events-left`: the committed
 *   cursor after it equals the one before it) and closed (no transaction left open on the connection);
 * - every rolled-back transaction reached its caller as a failure recorded with the error's code,
 *   disk_full or io_error (`reported`): as many such failures in the history as rolled-back
 *   transactions, so none was swallowed and answered ok, and none made up.
 *
 * What was acknowledged before a failure staying intact is I11's (no lost task) and I8's to judge.
 */
export const storageAtomic: Checker = {
  invariant: 'Q18',
  kind: 'safety',
  description: 'storage failures leave nothing half-written: each failed write is rolled back whole and reported to its caller',
  check(world: WorldResult) {
    const out = new ViolationList('Q18', 'safety');
    const entries = world.history.entries();
    let pending: NoteEntry | undefined;
    let rollbacks = 0;
    const reported: HistoryEntry[] = [];
    const unended = (failed: NoteEntry) =>
      out.add('rolled-back', `the ${String((failed.data as FailedNote).code)} at #${failed.index} (${String((failed.data as FailedNote).sql)}) did not end its transaction: the rest of it went on and committed`, { at: [failed.index] });
    for (const entry of entries) {
      if (entry.type === 'fail' && STORAGE_FAILURE_REASONS.has(entry.reason)) reported.push(entry);
      if (entry.type !== 'note') continue;
      if (entry.kind === 'storage-failed') {
        const data = (entry.data ?? {}) as FailedNote;
        if (data.inTransaction !== true) {
          out.add('in-transaction', `a write statement failed with ${String(data.code)} at #${entry.index} outside any transaction (${String(data.sql)}): what its call wrote before it committed on its own`, { at: [entry.index] });
          continue;
        }
        if (pending !== undefined) unended(pending);
        pending = entry;
      } else if (entry.kind === 'storage-rollback') {
        const data = (entry.data ?? {}) as RollbackNote;
        rollbacks++;
        pending = undefined;
        if (data.before !== data.after) {
          out.add('no-events-left', `the transaction rolled back after ${String(data.code)} at #${entry.index} left events: the cursor was ${String(data.before)} before it and ${String(data.after)} after`, { at: [entry.index] });
        }
        if (data.inTransaction !== false) out.add('no-events-left', `the transaction that failed with ${String(data.code)} at #${entry.index} was left open on the connection`, { at: [entry.index] });
      }
    }
    if (pending !== undefined) unended(pending);
    if (reported.length !== rollbacks) {
      out.add(
        'reported',
        `${rollbacks} transaction(s) were rolled back by a full disk or an I/O error, but ${reported.length} call(s) were recorded failed with disk_full or io_error: ${reported.length < rollbacks ? 'a failure was swallowed and the call answered as if it had written' : 'a call was reported failed that no rollback explains'}`,
        { at: reported.slice(0, 5).map((entry) => entry.index) },
      );
    }
    return out.list;
  },
};
