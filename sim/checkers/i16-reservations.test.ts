import { describe, expect, it } from 'vitest';
import type { QueueConfig, ReservationView } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { i16Released, i16Reservations } from './i16-reservations.ts';
import { budgetRun, buildWithBudgets, enqueueWith, withEvents } from './__test-helpers__/budget-run.ts';

const budgets: QueueConfig['budgets'] = {
  browser: { kind: 'concurrency', limit: 2 },
  tpm: { kind: 'rate', capacity: 5_000, refill: 5_000, periodMs: 60_000, meter: 'tokens' },
  run_tokens: { kind: 'total', limit: 4_000, per: 'run', meter: 'tokens' },
};

/** Task 1 run to the end; task 2 claimed, its lease lapsed (uncertain, keeping its units); task 3 waiting. */
async function mixed(config: Partial<QueueConfig> = { budgets }): Promise<WorldResult> {
  const run = budgetRun({ ...config, perTenantLimit: 2, globalLimit: 2 });
  const a = (await enqueueWith(run, { needs: { browser: 1, tpm: 2_000, run_tokens: 2_500 } }))!;
  const b = (await enqueueWith(run, { tenant: 'globex', needs: { browser: 1, tpm: 1_000 } }))!;
  await enqueueWith(run, { tenant: 'initech', needs: { browser: 1 } });
  await run.claim('w0#1', a);
  await run.claim('w1#1', b);
  await run.runToDone('w0#1', a);
  run.advance(31_000);
  await run.expireLeases();
  return await buildWithBudgets(run, { drained: false });
}

function editRows(world: WorldResult, edit: (rows: ReservationView[]) => ReservationView[]): WorldResult {
  return { ...world, reservations: edit(world.reservations!.map((row) => ({ ...row }))) };
}

describe('I16 reservations balance', () => {
  it('passes a real run: a finished attempt released, an uncertain one still holding its units', async () => {
    const world = await mixed();
    expect(world.final.tasks.map((task) => task.state)).toEqual(['done', 'uncertain', 'ready']);
    expect(world.reservations!.filter((row) => row.released === null).map((row) => `${row.taskId}/${row.budget}`)).toEqual(['2/browser', '2/tpm']);
    expectClean(i16Reservations, world);
  });

  it('fails a released row that does not balance, and consumption beyond the reservation', async () => {
    const world = await mixed();
    const first = (rows: ReservationView[], budget: string, change: (row: ReservationView) => void) => {
      change(rows.find((row) => row.taskId === 1 && row.budget === budget)!);
      return rows;
    };
    expectViolation(i16Reservations, editRows(world, (rows) => first(rows, 'tpm', (row) => (row.released = row.released! + 1))), /I16 balance: task 1 g1 tpm reserved 2100 but consumed 2100 \+ released 1 = 2101/);
    expectViolation(i16Reservations, editRows(world, (rows) => first(rows, 'run_tokens', (row) => (row.consumed = row.reserved + 5))), /I16 balance: task 1 g1 run_tokens consumed 2505 of a reservation of 2500/);
    expectViolation(i16Reservations, editRows(world, (rows) => [...rows, { ...rows[0]! }]), /I16 unique: task 1 g1 browser has more than one reservation row/);
    // A semaphore that kept its unit: balanced on paper, but a leak.
    expectViolation(i16Reservations, editRows(world, (rows) => first(rows, 'browser', (row) => Object.assign(row, { consumed: 1, released: 0 }))), /I16 semaphore: task 1 g1 browser is a concurrency budget: all 1 units come back when the slot is freed, but 0 were released and 1 consumed/);
  });

  it('fails a reservation that is not what the log granted', async () => {
    const world = await mixed();
    expectViolation(i16Reservations, editRows(world, (rows) => rows.map((row) => (row.taskId === 2 && row.budget === 'tpm' ? { ...row, reserved: 1_500 } : row))), /I16 granted: task 2 g1 tpm reserved 1500, the log granted that attempt 1000/);
    expectViolation(i16Reservations, editRows(world, (rows) => rows.filter((row) => !(row.taskId === 2 && row.budget === 'browser'))), /the log granted task 2 g1 1 of browser but no reservation row records it/);
  });

  it('fails a reservation released twice: an event naming a release the rows did not keep', async () => {
    const world = await mixed();
    const completed = world.events.find((event) => event.type === 'completed')!;
    const twice = withEvents(world, (events) => [...events, { ...completed, id: completed.id + 1_000, seq: completed.seq + 1_000, data: { released: { browser: 1 } } }]);
    expectViolation(i16Reservations, twice, /I16 once: task 1 browser: events \d+, 1\d+ release 2 units in 2 release\(s\), the reservations record 1 released in 1/);
    const silent = withEvents(world, (events) => events.map((event) => (event.id === completed.id ? { ...event, data: { ...event.data, released: {} } } : event)));
    expectViolation(i16Reservations, silent, /I16 once: task 1 browser: the reservations record 1 release\(s\) that no event names/);
  });

  it('fails units still held by a task that holds no slot, or by an older generation', async () => {
    const world = await mixed();
    const open = (rows: ReservationView[]) => rows.map((row) => (row.taskId === 1 && row.budget === 'browser' ? { ...row, released: null, releasedAt: null } : row));
    expectViolation(i16Reservations, editRows(world, open), /I16 held: task 1 g1 browser is still held \(1 units\) but the task is done, which holds no slot/);
    const older = withEvents(world, (events) => events);
    const retyped = { ...older, final: { ...older.final, tasks: older.final.tasks.map((task) => (task.id === 2 ? { ...task, generation: 2 } : task)) } };
    expectViolation(i16Reservations, retyped, /I16 held: task 2 g1 browser is still held but the task is uncertain at generation 2/);
  });

  it('liveness: a drained run holds nothing; one still holding fails; an undrained run is left to I11', async () => {
    const world = await mixed();
    expectClean(i16Released, world);
    expectViolation(i16Released, { ...world, drained: true }, /I16 drained: task 2 g1 browser still holds 1 units after the liveness phase/);
    const run = budgetRun({ budgets });
    const a = (await enqueueWith(run, { needs: { browser: 1, tpm: 100 } }))!;
    await run.claim('w0#1', a);
    await run.runToDone('w0#1', a);
    const done = await buildWithBudgets(run);
    expectClean(i16Released, done);
    expectClean(i16Reservations, done);
  });

  it('skips every rule for an older result without reservations', async () => {
    const world = await mixed();
    expectClean(i16Reservations, { ...world, reservations: undefined });
    expectClean(i16Released, { ...world, drained: true, reservations: undefined });
  });

  /**
   * Found by this checker against e60b471: a meterless rate or total budget counts all it reserved as
   * consumed (the release event's `consumed` says so) but the reservation row kept consumed 0 with
   * released 0, so reserved != consumed + released. Fixed in the core (the release writes consumed).
   */
  it('a meterless budget\'s released row balances (the release records what it consumed)', async () => {
    const run = budgetRun({ budgets: { calls: { kind: 'rate', capacity: 10, refill: 1, periodMs: 1_000 }, tools: { kind: 'total', limit: 10, per: 'run' } } });
    const a = (await enqueueWith(run, { needs: { calls: 3, tools: 2 } }))!;
    await run.claim('w0#1', a);
    await run.runToDone('w0#1', a);
    const world = await buildWithBudgets(run);
    expect(world.events.find((event) => event.type === 'completed')!.data.consumed).toEqual({ calls: 3, tools: 2 });
    expectClean(i16Reservations, world);
  });
});
