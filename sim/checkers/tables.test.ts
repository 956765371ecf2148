import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite-store.ts';
import { LATEST_SCHEMA_VERSION } from '../../src/store/migrations.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { World, type WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { realRun } from './__test-helpers__/real-run.ts';
import { i4Capacity } from './i4-capacity.ts';
import { i7Settlement } from './i7-settlement.ts';
import { i11Contiguous } from './i11-no-lost-task.ts';
import { allCheckers } from './index.ts';
import { budgetRun, buildWithBudgets, enqueueWith, pause } from './__test-helpers__/budget-run.ts';
import { TABLE_READERS, unreadTables, type AuditedWorld, type AuditFields } from './tables.ts';

/**
 * The fields of TABLE_READERS the world does not export yet (sim/world.ts is wired separately). The
 * test below asserts exactly these are absent from a real run, so wiring one makes it fail until it is
 * taken off this list, and a field that silently stops being exported fails it too.
 */
const AWAITING_WORLD: string[] = [];

/** The tables of a freshly migrated database, read from sqlite_master (plus `extra` statements run on it). */
function schemaTables(extra = ''): string[] {
  const store = SqliteStore.open(':memory:', { busyTimeoutMs: 1_000, busyRetries: 0 }, () => 0);
  try {
    if (extra !== '') store.db.exec(extra);
    return (store.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as { name: string }[]).map((row) => row.name);
  } finally {
    void store.close();
  }
}

const checkerIds = [...new Set(allCheckers.map((checker) => checker.invariant))];

function field(world: WorldResult, path: string): unknown {
  return path.split('.').reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], world);
}

describe('every table the core writes is read by a checker (issue 15 item 5)', () => {
  it('the migrated schema has the tables the registry names, and every one has a reader in allCheckers', () => {
    const tables = schemaTables();
    expect(tables).toEqual(['admission_decisions', 'budget_levels', 'checkpoints', 'counters', 'credit_ledger', 'dead_letters', 'effects', 'events', 'rejections', 'reservations', 'schema_migrations', 'signal_counters', 'tasks', 'tenant_pauses', 'tenant_service']);
    expect(unreadTables(tables, TABLE_READERS, checkerIds)).toEqual([]);
    // No stale entries: the registry names only tables that exist.
    expect(Object.keys(TABLE_READERS).filter((table) => !tables.includes(table))).toEqual([]);
  });

  it('fails for a table added without a reader, and for a reader that is not a checker', () => {
    const tables = schemaTables('CREATE TABLE audit_trail (id INTEGER PRIMARY KEY, note TEXT NOT NULL)');
    expect(unreadTables(tables, TABLE_READERS, checkerIds)).toEqual(['audit_trail']);
    const bogus = { ...TABLE_READERS, rejections: { ...TABLE_READERS.rejections!, checkers: ['I99'] } };
    expect(unreadTables(tables, bogus, checkerIds)).toEqual(['audit_trail', 'rejections']);
    const none = { ...TABLE_READERS, counters: { ...TABLE_READERS.counters!, checkers: [] } };
    expect(unreadTables(schemaTables(), none, checkerIds)).toEqual(['counters']);
  });

  it('a real run carries every field the registry names, except exactly the ones awaiting the world', async () => {
    const world = await new World(catalogueScenario('group-meal'), '1').run();
    const missing = Object.values(TABLE_READERS)
      .map((reader) => reader.field)
      .filter((path) => field(world, path) === undefined);
    expect(missing.sort()).toEqual([...AWAITING_WORLD].sort());
  });
});

/** A real run with two tasks (one done, one superseded before it ran) and its audit fields read from the queue. */
async function audited(): Promise<WorldResult & Required<AuditFields>> {
  const run = realRun();
  const task = (await run.enqueue({ tier: 'long' }))!;
  await run.claim('w0#1', task);
  await run.runToDone('w0#1', task);
  await run.enqueue({ topic: 'topic-7' });
  await run.enqueue({ topic: 'topic-7', version: 2 });
  const creditLedger = await run.queue.creditLedger();
  const schemaMigrations = await run.queue.schemaMigrations();
  return { ...(await run.build()), creditLedger, schemaMigrations };
}

describe('the rules over the tables the world did not read before', () => {
  it('I7 holds the credit ledger to the holds: one row per closed hold, none for an open one', async () => {
    const world = await audited();
    expect(world.creditLedger.map((row) => row.kind)).toEqual(['charge', 'release']);
    expectClean(i7Settlement, world);
    expectViolation(i7Settlement, { ...world, creditLedger: world.creditLedger.slice(1) } as AuditedWorld, /I7 ledger: task 1: hold settled has 0 ledger rows/);
    expectViolation(i7Settlement, { ...world, creditLedger: [...world.creditLedger, world.creditLedger[0]!] } as AuditedWorld, /hold settled has 2 ledger rows/);
    const wrong = world.creditLedger.map((row, index) => (index === 0 ? { ...row, credits: row.credits + 1 } : row));
    expectViolation(i7Settlement, { ...world, creditLedger: wrong } as AuditedWorld, /its ledger row is charge/);
    const open = world.holds.find((hold) => hold.state === 'held')!;
    const forOpen = [...world.creditLedger, { taskId: open.taskId, tenant: open.tenant, kind: 'release' as const, credits: 0, at: 0 }];
    expectViolation(i7Settlement, { ...world, creditLedger: forOpen } as AuditedWorld, /hold still held but the ledger has 1 row/);
    expectViolation(i7Settlement, { ...world, creditLedger: [{ taskId: 99, tenant: 'acme', kind: 'charge', credits: 1, at: 0 }, ...world.creditLedger] } as AuditedWorld, /task 99, which has no hold/);
  });

  it('I4 holds the kept live counter to the final tasks', async () => {
    const world = await audited();
    expect(world.final.live).toBe(1);
    expectClean(i4Capacity, world);
    expectViolation(i4Capacity, { ...world, final: { ...world.final, live: 2 } }, /I4 counter: the live counter ends at 2 but 1 tasks are ready, running or uncertain/);
  });

  it('I11 holds the applied migrations to one creation at the latest version', async () => {
    const world = await audited();
    expect(world.schemaMigrations.map((migration) => migration.version)).toEqual(Array.from({ length: LATEST_SCHEMA_VERSION }, (_, index) => index + 1));
    expectClean(i11Contiguous, world);
    const gap = world.schemaMigrations.filter((migration) => migration.version !== 3);
    expectViolation(i11Contiguous, { ...world, schemaMigrations: gap } as AuditedWorld, new RegExp(`I11 schema: the database recorded migrations \\[${gap.map((migration) => migration.version).join(', ')}\\]`));
    const later = world.schemaMigrations.map((migration, index) => (index === 4 ? { ...migration, appliedAt: migration.appliedAt + 1_000 } : migration));
    expectViolation(i11Contiguous, { ...world, schemaMigrations: later } as AuditedWorld, /applied at 2 different times/);
  });
});

describe('the rules over issue 16\'s tables (budget_levels, reservations, tenant_pauses, admission_decisions)', () => {
  it('each table\'s registered checkers pass the real rows and fail an edited copy', async () => {
    const run = budgetRun({ capacity: 2, globalLimit: 2, perTenantLimit: 2, budgets: { browser: { kind: 'concurrency', limit: 1 } } });
    const a = (await enqueueWith(run, { needs: { browser: 1 } }))!;
    await enqueueWith(run, { needs: { browser: 1 } });
    await run.claim('w0#1', a);
    expect(await run.tryClaim('w1#1')).toBeUndefined();
    await pause(run, 'globex');
    await enqueueWith(run, { tenant: 'globex' });
    const world = await buildWithBudgets(run, { drained: false });
    const byId = (id: string) => allCheckers.filter((checker) => checker.invariant === id);
    const clean = (id: string, w: WorldResult) => expect(byId(id).flatMap((checker) => checker.check(w)).map((v) => v.message)).toEqual([]);
    const fails = (id: string, w: WorldResult) => expect(byId(id).flatMap((checker) => checker.check(w)).length).toBeGreaterThan(0);
    const edits: Record<string, (w: WorldResult) => WorldResult> = {
      budget_levels: (w) => ({ ...w, budgetLevels: w.budgetLevels!.map((row) => ({ ...row, level: row.level + 1 })) }),
      reservations: (w) => ({ ...w, reservations: w.reservations!.map((row) => ({ ...row, reserved: row.reserved + 1 })) }),
      tenant_pauses: (w) => ({ ...w, pausedTenants: [] }),
      admission_decisions: (w) => ({ ...w, admissionDecisions: w.admissionDecisions!.map((row) => ({ ...row, reason: 'unknown', action: row.action === 'PAUSE' ? 'RESUME' : row.action })) }),
    };
    for (const [table, edit] of Object.entries(edits)) {
      const reader = TABLE_READERS[table]!;
      expect(field(world, reader.field), table).toBeDefined();
      for (const id of reader.checkers) {
        clean(id, world);
        fails(id, edit(world));
      }
    }
  });
});
