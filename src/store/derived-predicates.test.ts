import { describe, expect, it } from 'vitest';
import { HOLD_EDGES, HOLD_OPEN, holdCheckSql, holdEdgeFor, HOLD_STATES, isHoldOpen } from '../queue/holds.ts';
import { PRIORITY_RANGE, priorityCheckSql } from '../queue/scoring.ts';
import { OCCUPYING_SQL, OCCUPYING_STATES, stateInSql, STATES } from '../queue/states.ts';
import { MIGRATIONS } from './migrations.ts';
import { PG_MIGRATIONS } from './pg-migrations.ts';

/**
 * The schema's predicates are the state machine's. Migrations keep their exact text forever (databases
 * in the field carry them), so they are literals; this checks every literal against what states.ts,
 * holds.ts and PRIORITY_RANGE derive. A change to the machine that alters a set fails here, and needs a
 * new migration, never an edit of an old one.
 */
const DIALECTS = [
  ['sqlite', MIGRATIONS],
  ['postgres', PG_MIGRATIONS],
] as const;

function all(sql: string, pattern: RegExp): string[] {
  return [...sql.matchAll(pattern)].map((match) => match[0]!);
}

describe.each(DIALECTS)('%s migrations', (_dialect, migrations) => {
  const text = migrations.map((migration) => migration.sql).join('\n');

  it('write every partial index over held slots with the occupying predicate', () => {
    const indexes = all(text, /CREATE INDEX tasks_holding[^;]*;/g);
    expect(indexes.length).toBeGreaterThan(0);
    for (const index of indexes) expect(index.replace(/\s+/g, ' ')).toContain(`WHERE ${OCCUPYING_SQL};`);
  });

  it('check the base priority against PRIORITY_RANGE', () => {
    const checks = all(text, /CHECK \(priority [^)]*\)/g);
    expect(checks.length).toBeGreaterThan(0);
    for (const check of checks) expect(check).toBe(`CHECK (${priorityCheckSql()})`);
  });

  it('check the task state against the state list, and the hold state against the hold table', () => {
    const states = all(text, /CHECK \(state IN \([^)]*\)\)/g);
    expect(states.length).toBeGreaterThan(0);
    for (const check of states) expect(check.replace(/, /g, ',')).toBe(`CHECK (${stateInSql(STATES)})`.replace(/, /g, ','));
    const holds = all(text, /CHECK \(hold_state IN \([^)]*\)\)/g);
    expect(holds.length).toBeGreaterThan(0);
    for (const check of holds) expect(check).toBe(`CHECK (${holdCheckSql()})`);
  });
});

describe('derived predicates', () => {
  it('the occupying predicate is the occupying states, in table order', () => {
    expect(OCCUPYING_STATES).toEqual(['running', 'uncertain']);
    expect(OCCUPYING_SQL).toBe("state IN ('running', 'uncertain')");
    expect(stateInSql(['uncertain', 'running'], 's.state')).toBe("s.state IN ('running', 'uncertain')");
    expect(() => stateInSql([])).toThrow(/no states/);
  });

  it('the priority range is the one the SPEC names', () => {
    expect(PRIORITY_RANGE).toEqual({ min: 0, max: 30 });
    expect(priorityCheckSql()).toBe('priority BETWEEN 0 AND 30');
  });

  it('a hold opens once and closes once, from held', () => {
    expect(HOLD_OPEN).toBe('held');
    expect(HOLD_STATES).toEqual(['held', 'settled', 'released']);
    expect(holdEdgeFor(1, 'held', 'settled').event).toBe('settle');
    expect(holdEdgeFor(1, 'held', 'released').event).toBe('release');
    expect(holdEdgeFor(1, null, 'held').event).toBe('open');
    expect(() => holdEdgeFor(7, 'settled', 'released')).toThrow(/task 7: a hold cannot move settled -> released/);
    expect(() => holdEdgeFor(7, 'released', 'held')).toThrow(/cannot move/);
    expect(isHoldOpen('held')).toBe(true);
    expect(isHoldOpen('settled')).toBe(false);
    expect(isHoldOpen(null)).toBe(false);
    expect(HOLD_EDGES.filter((edge) => edge.from === null)).toHaveLength(1);
  });
});
