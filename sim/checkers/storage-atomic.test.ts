import { beforeAll, describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../history.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { World, type WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { storageAtomic } from './storage-atomic.ts';

/** A seed of the storage-faults scenario, whose full disks and I/O errors really landed. */
let run: WorldResult;
beforeAll(async () => {
  run = await new World(catalogueScenario('storage-faults'), '1').run();
}, 120_000);

/** The run with its history rewritten by `edit` (entries are copied, so the run itself is untouched). */
function withHistory(edit: (entries: HistoryEntry[]) => HistoryEntry[]): WorldResult {
  const entries = edit(run.history.entries().map((entry) => ({ ...entry })));
  return { ...run, history: { entries: () => entries } } as unknown as WorldResult;
}

const isNote = (kind: string) => (entry: HistoryEntry) => entry.type === 'note' && entry.kind === kind;

describe('Q18 storage failures leave nothing half-written', () => {
  it('passes a run in which the disk filled and writes met I/O errors', () => {
    expect(run.crash).toBeUndefined();
    const entries = run.history.entries();
    expect(entries.filter(isNote('storage-failed')).length).toBeGreaterThan(5);
    expect(entries.filter(isNote('storage-rollback')).length).toBe(entries.filter((entry) => entry.type === 'fail' && (entry.reason === 'disk_full' || entry.reason === 'io_error')).length);
    expectClean(storageAtomic, run);
  });

  it('fails when a call that met a storage failure is not recorded failed (the error was swallowed, the call answered ok)', () => {
    const world = withHistory((entries) => {
      const dropped = entries.findIndex((entry) => entry.type === 'fail' && entry.reason === 'io_error');
      return entries.filter((_, index) => index !== dropped);
    });
    expectViolation(storageAtomic, world, /Q18 reported: \d+ transaction\(s\) were rolled back .* a failure was swallowed/);
  });

  it('fails when a statement failed outside any transaction (what its call wrote before it committed on its own)', () => {
    const world = withHistory((entries) => {
      const at = entries.findIndex(isNote('storage-failed'));
      entries[at] = { ...entries[at]!, data: { ...(entries[at]!.data as object), inTransaction: false } } as HistoryEntry;
      return entries;
    });
    expectViolation(storageAtomic, world, /Q18 in-transaction: a write statement failed with (disk_full|io_error) at #\d+ outside any transaction/);
  });

  it('fails when a failed statement did not end its transaction (the rest of it went on and committed)', () => {
    const world = withHistory((entries) => {
      const rollback = entries.findIndex(isNote('storage-rollback'));
      return entries.filter((_, index) => index !== rollback);
    });
    expectViolation(storageAtomic, world, /Q18 rolled-back: the (disk_full|io_error) at #\d+ .* did not end its transaction/);
  });

  it('fails when a rolled-back transaction left events, or was left open', () => {
    const moved = withHistory((entries) => {
      const at = entries.findIndex(isNote('storage-rollback'));
      const data = entries[at]!.data as { before: number };
      entries[at] = { ...entries[at]!, data: { ...data, after: data.before + 2 } } as HistoryEntry;
      return entries;
    });
    expectViolation(storageAtomic, moved, /Q18 no-events-left: the transaction rolled back after (disk_full|io_error) at #\d+ left events: the cursor was (\d+) before it and \d+ after/);
    const open = withHistory((entries) => {
      const at = entries.findIndex(isNote('storage-rollback'));
      entries[at] = { ...entries[at]!, data: { ...(entries[at]!.data as object), inTransaction: true } } as HistoryEntry;
      return entries;
    });
    expectViolation(storageAtomic, open, /was left open on the connection/);
  });
});
