import { describe, expect, it } from 'vitest';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import type { RealRun } from './__test-helpers__/real-run.ts';
import { i17PausedTenant } from './i17-paused-tenant.ts';
import { budgetRun, buildWithBudgets, enqueueWith, pause, resume } from './__test-helpers__/budget-run.ts';

/** A pause the history records as acknowledged without the queue ever hearing it: what a queue that ignored it would leave. */
function unheardPause(run: RealRun, tenant: string, ev: number, op: 'pauseTenant' | 'resumeTenant' = 'pauseTenant') {
  const invoke = run.history.invoke('operator', op, { data: { args: op === 'pauseTenant' ? [tenant, 'maintenance'] : [tenant] } });
  run.history.ok(invoke, { data: { ev } });
}

describe('I17 a paused tenant gets no lease', () => {
  it('passes a real run: the paused tenant waits, the other runs, the resumed tenant then runs', async () => {
    const run = budgetRun({ globalLimit: 2, perTenantLimit: 1 });
    await pause(run, 'acme');
    const a = (await enqueueWith(run, { tenant: 'acme' }))!;
    const b = (await enqueueWith(run, { tenant: 'globex' }))!;
    await run.claim('w0#1', b);
    expect(await run.tryClaim('w1#1')).toBeUndefined();
    await resume(run, 'acme');
    await run.claim('w1#1', a);
    const world = await buildWithBudgets(run);
    expect(world.admissionDecisions!.map((row) => `${row.action}:${row.reason}`)).toEqual(['PAUSE:maintenance', 'DEFER:tenant_paused', 'RESUME:resumed']);
    expectClean(i17PausedTenant, world);
  });

  it('fails a claim after a pause, before its resume (in commit order)', async () => {
    const run = budgetRun({ globalLimit: 2, perTenantLimit: 1 });
    const a = (await enqueueWith(run, { tenant: 'acme' }))!;
    unheardPause(run, 'acme', 1);
    await run.claim('w0#1', a);
    unheardPause(run, 'acme', 2, 'resumeTenant');
    const world = await buildWithBudgets(run);
    expectViolation(i17PausedTenant, world, /I17 lease: task 1 of tenant acme was claimed \(event 2\) after the tenant was paused at cursor 1 and before its resume at cursor 2/);
    // The rows never heard of it either.
    expectViolation(i17PausedTenant, world, /I17 recorded: tenant acme was paused .* but no PAUSE admission decision records it/);
  });

  it('a pause without a resume lasts to the end of the log (it survives restarts)', async () => {
    const run = budgetRun({ globalLimit: 2, perTenantLimit: 1 });
    const a = (await enqueueWith(run, { tenant: 'acme' }))!;
    const b = (await enqueueWith(run, { tenant: 'globex' }))!;
    unheardPause(run, 'acme', 2);
    run.note('restart', 'faults');
    await run.claim('w0#1', a);
    await run.claim('w1#1', b);
    const world = await buildWithBudgets(run);
    expectViolation(i17PausedTenant, world, /task 1 of tenant acme was claimed \(event 3\) after the tenant was paused at cursor 2 and never resumed/);
    expect(i17PausedTenant.check(world).some((v) => /globex/.test(v.message))).toBe(false);
  });

  it('a claim committed before the pause is not the pause\'s', async () => {
    const run = budgetRun({ globalLimit: 2, perTenantLimit: 1 });
    const a = (await enqueueWith(run, { tenant: 'acme' }))!;
    await run.claim('w0#1', a);
    await pause(run, 'acme');
    await run.runToDone('w0#1', a);
    expectClean(i17PausedTenant, await buildWithBudgets(run));
  });

  it('uses the PAUSE / RESUME rows when the history does not name the tenant', async () => {
    const run = budgetRun({ globalLimit: 2, perTenantLimit: 1 });
    const a = (await enqueueWith(run, { tenant: 'acme' }))!;
    run.advance(1_000);
    await run.claim('w0#1', a);
    const world = await buildWithBudgets(run);
    const at = world.events[0]!.at;
    const rows = [{ at: at + 1, action: 'PAUSE' as const, reason: 'maintenance', tenant: 'acme' }];
    expectViolation(i17PausedTenant, { ...world, admissionDecisions: rows, pausedTenants: [{ tenant: 'acme', reason: 'maintenance', at: at + 1 }] }, /I17 lease: task 1 of tenant acme was claimed at \d+ \(event 2\) after the recorded PAUSE at \d+, never resumed/);
    const resumed = [...rows, { at: at + 500, action: 'RESUME' as const, reason: 'resumed', tenant: 'acme' }];
    expectClean(i17PausedTenant, { ...world, admissionDecisions: resumed, pausedTenants: [] });
  });

  it('holds tenant_pauses to the rows, and the rows to the history', async () => {
    const run = budgetRun({});
    await pause(run, 'acme', 'incident');
    await pause(run, 'globex');
    await resume(run, 'globex');
    const world = await buildWithBudgets(run);
    expect(world.pausedTenants!.map((pause) => pause.tenant)).toEqual(['acme']);
    expectClean(i17PausedTenant, world);
    expectViolation(i17PausedTenant, { ...world, pausedTenants: [] }, /I17 table: tenant acme's last recorded change is a PAUSE at \d+ but tenant_pauses does not hold it/);
    expectViolation(i17PausedTenant, { ...world, pausedTenants: [...world.pausedTenants!, { tenant: 'globex', reason: 'x', at: 0 }] }, /tenant_pauses holds globex paused but its recorded changes end in a RESUME/);
    expectViolation(i17PausedTenant, { ...world, pausedTenants: [{ ...world.pausedTenants![0]!, reason: 'other' }] }, /tenant_pauses holds acme paused at \d+ \(other\), its PAUSE decision says \d+ \(incident\)/);
    // A pause the rows lost (a reopen that forgot it): the history's last call for acme was a pause.
    const forgot = world.admissionDecisions!.filter((row) => row.tenant !== 'acme');
    expectViolation(i17PausedTenant, { ...world, admissionDecisions: [...forgot, { at: 1, action: 'PAUSE', reason: 'incident', tenant: 'acme' }, { at: 2, action: 'RESUME', reason: 'resumed', tenant: 'acme' }], pausedTenants: [] }, /tenant acme's last acknowledged call was a pause .* but its last recorded change is a RESUME/);
    expectClean(i17PausedTenant, { ...world, admissionDecisions: undefined, pausedTenants: undefined });
  });
});
