import { describe, expect, it } from 'vitest';
import { InvariantError } from '../src/queue/errors.ts';
import { realRun } from './checkers/__test-helpers__/real-run.ts';
import { judge, refusalOf } from './run-scenario.ts';

async function finishedRun() {
  const run = realRun();
  const task = (await run.enqueue())!;
  await run.claim('w0#1', task);
  await run.runToDone('w0#1', task);
  return await run.build();
}

describe('a run stopped by a refusal of the design is a finding, not a harness crash (issue 35)', () => {
  it('names a refusal by the state machine as a safety finding, exit class safety', async () => {
    const world = await finishedRun();
    world.crash = new InvariantError('task 1: supersede cannot move it uncertain -> superseded');
    const report = judge(world);
    expect(report.verdict).toBe('safety');
    expect(report.violations[0]).toEqual({ invariant: 'refused', kind: 'safety', message: 'refused by the state machine: task 1: supersede cannot move it uncertain -> superseded' });
    // The safety checkers still judge the run up to the refusal: this one is clean.
    expect(report.violations).toHaveLength(1);
  });

  it('names a constraint of the schema, found along the cause chain of a wrapping error', () => {
    const driver = Object.assign(new Error('CHECK constraint failed: state IN (...)'), { code: 'SQLITE_CONSTRAINT_CHECK' });
    expect(refusalOf(new Error('store write failed', { cause: driver }))).toEqual({ by: 'schema', message: 'SQLITE_CONSTRAINT_CHECK: CHECK constraint failed: state IN (...)' });
    expect(refusalOf(Object.assign(new Error('new row violates check constraint "tasks_state_check"'), { code: '23514' }))?.by).toBe('schema');
    expect(refusalOf(new InvariantError('task 4 changed during its own transaction (complete running -> done)'))?.by).toBe('core');
  });

  it('keeps any other crash a harness crash (nondeterminism, exit 3)', async () => {
    const world = await finishedRun();
    world.crash = new TypeError('x is undefined');
    const report = judge(world);
    expect(report.verdict).toBe('nondeterminism');
    expect(report.violations[0]!.invariant).toBe('harness');
    expect(refusalOf(Object.assign(new Error('busy'), { code: 'SQLITE_BUSY' }))).toBeUndefined();
  });
});
