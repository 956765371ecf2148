import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StorageError } from '../../src/queue/errors.ts';
import { SqliteStore } from '../../src/store/sqlite-store.ts';
import { openWorkQueue } from '../../src/work-queue.ts';
import { allCheckers } from '../checkers/index.ts';
import { coverageMarks } from '../checkers/marks.ts';
import { EventLoop } from '../event-loop.ts';
import { History } from '../history.ts';
import { SeededRandom } from '../random.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { StorageFaults } from '../store/storage-faults.ts';
import { World } from '../world.ts';
import { DEFAULT_SWARM_KINDS, drawSwarmPlan, SWARM_KINDS } from './swarm.ts';

afterEach(() => vi.restoreAllMocks());

const BIG = 'x'.repeat(64 * 1024);
const request = (topic: string, input: unknown = { text: 'hello' }) => ({ tenant: 'acme', topic, version: 1, priority: 3, input });

function memoryQueue() {
  const loop = new EventLoop();
  const storage = new StorageFaults();
  const raw = new Database(':memory:');
  const queue = openWorkQueue({ clock: loop.clock, random: new SeededRandom('core'), db: SqliteStore.open(storage.attach(raw), { busyTimeoutMs: 0, busyRetries: 0 }, () => loop.clock.now()) });
  return { loop, storage, raw, queue };
}

describe('the disk-full and io-error faults act beneath the store (S4, Q18)', () => {
  it('disk full works on a database in memory: a write that needs a page fails disk_full, one that fits goes through; overlapping windows empty at the last end', async () => {
    const { storage, raw, queue } = memoryQueue();
    expect((await queue.enqueue(request('t0'))).ok).toBe(true);
    const room = raw.pragma('max_page_count', { simple: true });
    expect(storage.fillUntil(0, 100)).toBe(true);
    expect(storage.fillUntil(0, 200)).toBe(true);
    await expect(queue.enqueue(request('big', { blob: BIG }))).rejects.toMatchObject({ name: 'StorageError', code: 'disk_full', operation: 'enqueue' });
    expect((await queue.enqueue(request('small'))).ok).toBe(true);
    storage.windowEnded(100);
    await expect(queue.enqueue(request('big', { blob: BIG }))).rejects.toBeInstanceOf(StorageError);
    storage.windowEnded(200);
    expect(raw.pragma('max_page_count', { simple: true })).toBe(room);
    expect((await queue.enqueue(request('big', { blob: BIG }))).ok).toBe(true);
    await queue.close();
  });

  it('a handle attached while the disk is full (a scheduler reopening) is full too; stop() empties it and arms nothing more', () => {
    const storage = new StorageFaults();
    storage.attach(new Database(':memory:'));
    storage.fillUntil(0, 1_000);
    const reopened = new Database(':memory:');
    reopened.exec('CREATE TABLE t (x)');
    storage.attach(reopened);
    expect(reopened.pragma('max_page_count', { simple: true })).toBe(reopened.pragma('page_count', { simple: true }));
    storage.stop();
    expect(reopened.pragma('max_page_count', { simple: true })).toBeGreaterThan(1_000);
    expect(storage.fillUntil(0, 1_000)).toBe(false);
  });

  it('an I/O error fails the write statement it counts to, never a read, a control statement, or one before it', async () => {
    const { storage, queue } = memoryQueue();
    const fired: string[] = [];
    storage.armIoError(1, (sql) => fired.push(sql));
    // Reads pass and are not counted.
    expect(await queue.snapshot()).toBeDefined();
    expect(fired).toEqual([]);
    let error: unknown;
    try {
      await queue.enqueue(request('t1'));
    } catch (thrown) {
      error = thrown;
    }
    expect(fired).toHaveLength(1);
    expect(fired[0]).not.toMatch(/^\s*(SAVEPOINT|RELEASE|ROLLBACK|BEGIN|COMMIT)/i);
    expect(error).toMatchObject({ name: 'StorageError', code: 'io_error', sqliteCode: 'SQLITE_IOERR_WRITE' });
    expect(await queue.snapshot()).toMatchObject({ tasks: [] });
    expect((await queue.enqueue(request('t1'))).ok).toBe(true);
    await queue.close();
  });

  it('notes what each failure did once watched: the failed statement in its transaction, the rollback with the event cursor unmoved', async () => {
    const { storage, queue, loop } = memoryQueue();
    const history = new History(loop);
    expect((await queue.enqueue(request('t0'))).ok).toBe(true);
    storage.watch(history);
    storage.armIoError(2, () => {});
    await expect(queue.enqueue(request('t1'))).rejects.toBeInstanceOf(StorageError);
    const notes = history.entries().filter((entry) => entry.type === 'note');
    expect(notes.map((note) => [note.kind, note.data])).toEqual([
      ['storage-failed', expect.objectContaining({ code: 'io_error', sqlite: 'SQLITE_IOERR_WRITE', inTransaction: true })],
      ['storage-rollback', { code: 'io_error', before: 1, after: 1, inTransaction: false }],
    ]);
    await queue.close();
  });

  it('a swarm draws them only when it lists them: the default swarm (mixed) draws what it drew before they existed', () => {
    expect(SWARM_KINDS).toContain('disk-full');
    expect(SWARM_KINDS).toContain('io-error');
    expect(DEFAULT_SWARM_KINDS).not.toContain('disk-full');
    expect(DEFAULT_SWARM_KINDS).not.toContain('io-error');
    // The kinds drawn before the ones appended after the storage faults (clock-jump-at, cancel-at: swarm.ts).
    const upTo = SWARM_KINDS.indexOf('io-error') + 1;
    let drawn = 0;
    for (let seed = 0; seed < 50; seed++) {
      const before = drawSwarmPlan(new SeededRandom(`s${seed}`), { kinds: DEFAULT_SWARM_KINDS.filter((kind) => SWARM_KINDS.indexOf(kind) < upTo), quietProbability: 0.1 }, 4, 150_000);
      const listed = drawSwarmPlan(new SeededRandom(`s${seed}`), { kinds: SWARM_KINDS.slice(0, upTo), quietProbability: 0.1 }, 4, 150_000);
      expect({ ...listed, timed: listed.timed.filter((fault) => fault.kind !== 'disk-full' && fault.kind !== 'io-error') }).toEqual(before);
      drawn += listed.timed.length - before.timed.length;
    }
    expect(drawn).toBeGreaterThan(10);
  });

  it('in a storage-faults run every disk_full and io_error recorded is a StorageError src/store threw, the marks count the landings, and the run passes', async () => {
    const thrown: StorageError[] = [];
    const real = SqliteStore.prototype.writeNow;
    vi.spyOn(SqliteStore.prototype, 'writeNow').mockImplementation(function (this: SqliteStore, ...args: Parameters<SqliteStore['writeNow']>) {
      try {
        return real.apply(this, args);
      } catch (error) {
        if (error instanceof StorageError) thrown.push(error);
        throw error;
      }
    });
    const run = await new World(catalogueScenario('storage-faults'), '2').run();
    expect(run.crash).toBeUndefined();
    const failed = run.history.entries().filter((entry) => entry.type === 'fail' && (entry.reason === 'disk_full' || entry.reason === 'io_error'));
    expect(failed.length).toBe(thrown.length);
    expect(failed.map((entry) => (entry.type === 'fail' ? entry.reason : '')).sort()).toEqual(thrown.map((error) => error.code).sort());
    const marks = coverageMarks(run);
    expect(marks.disk_full).toBeGreaterThan(0);
    expect(marks.io_error).toBe(7);
    expect(allCheckers.flatMap((checker) => checker.check(run)).map((violation) => violation.message)).toEqual([]);
    expect(run.drained).toBe(true);
  }, 120_000);
});
