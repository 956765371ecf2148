/**
 * The simulator's seams (store.ts SimulationSeams) hold as declared, on every kind of store the
 * contract suite opens (src/store/contract/): each offers every member of its form, the committed event
 * cursor moves only when a transaction that inserted an event commits, the synchronous form runs a
 * transaction to its end inside the call, and the asynchronous form tells the cursor at the commit,
 * before anything after it runs. No production code calls a seam, and none reaches the published
 * declarations.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AT, readyTask, STORE_KINDS, type StoreKind } from './contract/__test-helpers__/harness.ts';
import { freshPgStore } from './__test-helpers__/pg-test-store.ts';
import { PgStore } from './pg-store.ts';
import { SqliteStore } from './sqlite-store.ts';
import type { AsynchronousSeams, SeamedStore, Step, StoreTx, SynchronousSeams, TransactionBody } from './store.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** Every member of each form, checked against the interfaces by tsc (a member added to one and not listed here fails it). */
const MEMBERS = {
  synchronous: ['seams', 'committedEventCursor', 'writeNow', 'readNow'],
  asynchronous: ['seams', 'committedEventCursor', 'writeAtCommit', 'readAtCommit'],
} as const satisfies { synchronous: readonly (keyof SynchronousSeams)[]; asynchronous: readonly (keyof AsynchronousSeams)[] };
type UnlistedSynchronous = Exclude<keyof SynchronousSeams, (typeof MEMBERS.synchronous)[number]>;
type UnlistedAsynchronous = Exclude<keyof AsynchronousSeams, (typeof MEMBERS.asynchronous)[number]>;
const everyMemberListed: [UnlistedSynchronous | UnlistedAsynchronous] extends [never] ? true : UnlistedSynchronous | UnlistedAsynchronous = true;

/** The form each kind of store declares. */
const FORMS: Record<StoreKind, SeamedStore['seams']> = { 'sqlite-memory': 'synchronous', 'sqlite-file': 'synchronous', postgres: 'asynchronous', pglite: 'asynchronous' };

/** Every name a seam is declared under: none may reach a published declaration, nor be called from production code. */
const SEAM_METHODS = ['committedEventCursor', 'writeNow', 'readNow', 'writeAtCommit', 'readAtCommit'] as const;
const SEAM_TYPES = ['SimulationSeams', 'SeamedStore', 'CommitCursorSeam', 'SynchronousSeams', 'AsynchronousSeams'] as const;

/**
 * A store of `kind` as the simulator holds one, with its seams (not the contract harness's wrappers,
 * which offer `Store` alone); typed SeamedStore, so tsc checks that each class offers them.
 */
function openSeamed(kind: StoreKind, dirs: string[]): { store: SeamedStore; close: () => Promise<void> } {
  switch (kind) {
    case 'sqlite-memory': {
      const store: SeamedStore = SqliteStore.open(':memory:', { busyTimeoutMs: 1_000, busyRetries: 0 }, () => 0);
      return { store, close: () => store.close() };
    }
    case 'sqlite-file': {
      const directory = mkdtempSync(join(tmpdir(), 'leasehold-seams-'));
      dirs.push(directory);
      const store: SeamedStore = SqliteStore.open(join(directory, 'queue.sqlite'), { busyTimeoutMs: 1_000, busyRetries: 0, watchOtherProcesses: false }, () => 0);
      return { store, close: () => store.close() };
    }
    case 'postgres': {
      // A fresh schema of the run's server, dropped on close.
      const dropping = freshPgStore({ busyRetries: 0 });
      const store: SeamedStore = dropping.inner;
      return { store, close: () => dropping.close() };
    }
    case 'pglite': {
      const database = new PGlite();
      const store: SeamedStore = PgStore.open(database, { busyRetries: 0, schema: 'lh_seams' }, () => 0);
      return {
        store,
        async close() {
          await store.close();
          await database.close();
        },
      };
    }
  }
}

/** A write through the store's own form of the seams: its result, or its failure, and every cursor told at its commit. */
async function seamWrite<T>(store: SeamedStore, body: TransactionBody<T>): Promise<{ outcome: { value: T } | { error: unknown }; told: number[] }> {
  const told: number[] = [];
  if (store.seams === 'synchronous') {
    try {
      const value = store.writeNow('seams', () => AT, body);
      told.push(store.committedEventCursor());
      return { outcome: { value }, told };
    } catch (error) {
      return { outcome: { error }, told };
    }
  }
  try {
    return { outcome: { value: await store.writeAtCommit('seams', () => AT, body, (cursor) => told.push(cursor)) }, told };
  } catch (error) {
    return { outcome: { error }, told };
  }
}

function* maxEventId(tx: StoreTx): Step<number> {
  return yield* tx.eventCursor();
}

/** A task with one event, in the body's transaction. */
function* taskWithEvent(tx: StoreTx, at: number): Step<number> {
  const id = yield* readyTask(tx);
  yield* tx.eventAppend(id, 1, 'planted', at, '{}', null, null);
  return id;
}

describe.each(STORE_KINDS)('the simulator seams on %s', (kind) => {
  let opened: ReturnType<typeof openSeamed> | undefined;
  const dirs: string[] = [];
  beforeAll(async () => {
    opened = openSeamed(kind, dirs);
    // The PostgreSQL stores migrate on their first transaction.
    await opened.store.read('seams:open', maxEventId);
  });
  afterAll(async () => {
    await opened?.close();
    for (const directory of dirs) rmSync(directory, { recursive: true, force: true });
  });
  const store = (): SeamedStore => {
    if (opened === undefined) throw new Error('store used outside its describe block');
    return opened.store;
  };
  const form = FORMS[kind];
  const committed = () => store().committedEventCursor();
  const inDatabase = () => store().read('seams:max', maxEventId);

  it('offers every member of its form', () => {
    expect(everyMemberListed).toBe(true);
    expect(store().seams).toBe(form);
    for (const member of MEMBERS[form].filter((name) => name !== 'seams')) expect(typeof Reflect.get(store(), member), member).toBe('function');
  });

  it('moves the committed event cursor only when a transaction that inserted an event commits', async () => {
    const before = committed();
    expect(before).toBe(await inDatabase());
    // While the transaction runs, its event is not committed yet.
    const during: number[] = [];
    const inserted = await seamWrite(store(), function* (tx, at) {
      const id = yield* taskWithEvent(tx, at);
      during.push(committed());
      yield* tx.eventAppend(id, 2, 'planted', at, '{}', null, null);
      during.push(committed());
      return id;
    });
    expect('value' in inserted.outcome).toBe(true);
    expect(during).toEqual([before, before]);
    const after = committed();
    expect(after).toBeGreaterThan(before);
    expect(after).toBe(await inDatabase());
    expect(inserted.told).toEqual([after]);

    // A transaction that fails after its insert is rolled back: the cursor stays.
    const failed = await seamWrite(store(), function* (tx, at) {
      yield* taskWithEvent(tx, at);
      throw new Error('planted failure');
    });
    expect('error' in failed.outcome && String(failed.outcome.error)).toBe('Error: planted failure');
    expect(failed.told).toEqual([]);
    expect([committed(), await inDatabase()]).toEqual([after, after]);

    // An event inserted in a savepoint rolled back to is forgotten; the commit of the rest moves nothing.
    const rolledBack = await seamWrite(store(), function* (tx, at) {
      const id = yield* readyTask(tx);
      try {
        yield* tx.txSavepoint(function* () {
          yield* tx.eventAppend(id, 1, 'planted', at, '{}', null, null);
          throw new Error('planted failure');
        });
      } catch {
        // rolled back to the savepoint
      }
      return id;
    });
    expect('value' in rolledBack.outcome).toBe(true);
    expect([committed(), await inDatabase()]).toEqual([after, after]);
    expect(rolledBack.told).toEqual([after]);

    // A transaction that inserts no event, and a read, move nothing.
    await seamWrite(store(), (tx) => readyTask(tx));
    await store().read('seams:read', maxEventId);
    expect(committed()).toBe(after);
  });

  it.runIf(form === 'synchronous')('synchronous: writeNow and readNow run the transaction to its end inside the call', () => {
    const seamed = store();
    if (seamed.seams !== 'synchronous') throw new Error(`${kind} declares ${seamed.seams} seams`);
    const before = seamed.committedEventCursor();
    const id = seamed.writeNow('seams:now', () => AT, taskWithEvent);
    // An answer, not a promise: the transaction has committed by the time the call returns.
    expect(typeof id).toBe('number');
    expect(seamed.committedEventCursor()).toBeGreaterThan(before);
    expect(seamed.readNow('seams:now', (tx) => tx.taskById(id))).toMatchObject({ id, state: 'ready' });
    expect(seamed.readNow('seams:now', maxEventId)).toBe(seamed.committedEventCursor());
    // A failure is thrown from the call itself, after the rollback.
    const after = seamed.committedEventCursor();
    expect(() =>
      seamed.writeNow('seams:now', () => AT, function* (tx, at) {
        yield* taskWithEvent(tx, at);
        throw new Error('planted failure');
      }),
    ).toThrow('planted failure');
    expect(seamed.readNow('seams:now', maxEventId)).toBe(after);
  });

  it.runIf(form === 'asynchronous')('asynchronous: writeAtCommit tells the cursor at the commit, once, before its promise settles and before the next transaction begins', async () => {
    const seamed = store();
    if (seamed.seams !== 'asynchronous') throw new Error(`${kind} declares ${seamed.seams} seams`);
    const order: string[] = [];
    const told: number[] = [];
    const first = seamed.writeAtCommit('seams:one', () => AT, taskWithEvent, (cursor) => {
      told.push(cursor);
      order.push(`one committed, the store's cursor ${seamed.committedEventCursor()}`);
    });
    const second = seamed.writeAtCommit(
      'seams:two',
      () => AT,
      function* (tx, at) {
        order.push('two begins');
        return yield* taskWithEvent(tx, at);
      },
      (cursor) => {
        told.push(cursor);
        order.push('two committed');
      },
    );
    void first.then(() => order.push('one settled'));
    await Promise.all([first, second]);
    const [one, two] = told;
    expect(one).toBeLessThan(two!);
    expect(two).toBe(seamed.committedEventCursor());
    // Told first, with the cursor the store then knew; only then did its promise settle and the next transaction begin.
    expect(order[0]).toBe(`one committed, the store's cursor ${one}`);
    expect([...order.slice(1, 3)].sort()).toEqual(['one settled', 'two begins']);
    expect(order.slice(3)).toEqual(['two committed']);
    expect(two).toBe(await inDatabase());

    // A failed write is never told.
    told.length = 0;
    await expect(
      seamed.writeAtCommit(
        'seams:failed',
        () => AT,
        function* (tx, at) {
          yield* taskWithEvent(tx, at);
          throw new Error('planted failure');
        },
        (cursor) => told.push(cursor),
      ),
    ).rejects.toThrow('planted failure');
    expect(told).toEqual([]);

    // A read is told the cursor once it ended, the cursor it read.
    const read = await seamed.readAtCommit('seams:read', maxEventId, (cursor) => told.push(cursor));
    expect(told).toEqual([read]);
    expect(read).toBe(two);
  });
});

/** The .ts files of a folder, recursively. */
function sources(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('the simulator seams stay the simulator’s', () => {
  it('no production code calls a seam, but a store running its own Store methods through them', () => {
    const SELF = new Set(['src/store/sqlite-store.ts', 'src/store/pg-store.ts']);
    const call = new RegExp(`\\.(${SEAM_METHODS.join('|')})\\s*\\(`, 'g');
    const callers: string[] = [];
    for (const file of sources(join(ROOT, 'src'))) {
      const path = relative(ROOT, file);
      if (/\.test\.ts$|\.test-kit\.ts$|__test-helpers__/.test(path) || SELF.has(path)) continue;
      for (const match of readFileSync(file, 'utf8').matchAll(call)) callers.push(`${path}: ${match[0]}`);
    }
    expect(callers).toEqual([]);
    // Each store reaches its own seams only as `this.` (its write and read run through them).
    for (const path of SELF) {
      for (const match of readFileSync(join(ROOT, path), 'utf8').matchAll(new RegExp(`(\\S+)\\.(?:${SEAM_METHODS.join('|')})\\s*\\(`, 'g'))) expect(match[1], path).toMatch(/(^|\W)this$/);
    }
  });

  it('leaves every seam out of the published declarations (the build: tsconfig.build.json, then tools/prune-declarations.mjs)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-seams-dts-'));
    try {
      copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(ROOT, 'tsconfig.build.json'), compilerOptions: { outDir: join(dir, 'dist'), emitDeclarationOnly: true } }));
      // The exit status is not the point here (tsc emits what it can); the entry points' declarations must be there, which the prune checks.
      await promisify(execFile)(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', join(dir, 'tsconfig.json')], { cwd: ROOT }).catch(() => undefined);
      await promisify(execFile)(process.execPath, [join(ROOT, 'tools', 'prune-declarations.mjs'), dir], { cwd: ROOT });
      const published = sources(join(dir, 'dist')).filter((file) => file.endsWith('.d.ts'));
      const text = (file: string) => readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
      // The stores themselves are published, without their seams.
      const sqlite = text(join(dir, 'dist', 'src', 'store', 'sqlite-store.d.ts'));
      expect(sqlite).toMatch(/\bwrite<T>\(/);
      const leaks: string[] = [];
      const names = new RegExp(`\\b(${[...SEAM_METHODS, ...SEAM_TYPES].join('|')})\\b|\\breadonly seams\\b`, 'g');
      for (const file of published) for (const match of text(file).matchAll(names)) leaks.push(`${relative(dir, file)}: ${match[0]}`);
      expect(leaks).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
