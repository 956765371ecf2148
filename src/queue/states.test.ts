import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InvariantError } from './errors.ts';
import {
  EDGES,
  LIVE_STATES,
  OCCUPYING_STATES,
  ROW_RULES,
  STATES,
  TERMINAL_STATES,
  TRANSITIONS,
  canTransition,
  edgeFor,
  stateCheckSql,
} from './states.ts';
import * as taskWrites from '../store/sql/task-writes.ts';
import type { Statement } from '../store/sql/statement.ts';
import { checkAndCloseQueues } from './__test-helpers__/test-kit.ts';

afterEach(checkAndCloseQueues);

const SRC = join(import.meta.dirname, '..');

describe('the state machine table', () => {
  it('derives the live, occupying and terminal sets and TRANSITIONS from its edges', () => {
    expect(LIVE_STATES).toEqual(['ready', 'running', 'uncertain']);
    expect(OCCUPYING_STATES).toEqual(['running', 'uncertain']);
    expect(TERMINAL_STATES).toEqual(['done', 'failed', 'superseded', 'cancelled', 'expired']);
    for (const state of STATES) {
      const targets = new Set(EDGES.filter((edge) => edge.from === state).map((edge) => edge.to));
      expect(new Set(TRANSITIONS[state]), state).toEqual(targets);
    }
    expect(canTransition('running', 'uncertain')).toBe(true);
    expect(canTransition('uncertain', 'running')).toBe(false);
    expect(canTransition('done', 'ready')).toBe(false);
  });

  it('names the edge of every (event, from, to) it allows, and refuses any other with an InvariantError', () => {
    expect(edgeFor(1, 'claim', 'ready', 'running')).toMatchObject({ records: 'claimed', slot: 'take' });
    expect(edgeFor(1, 'expiry', 'running', 'uncertain')).toMatchObject({ records: 'lease_expired', slot: 'keep' });
    expect(edgeFor(1, 'enqueue', null, 'ready')).toMatchObject({ records: 'enqueued' });
    // Q10: a passed lease never means ready; Q11: only a confirmation or the reconciler frees uncertain.
    expect(() => edgeFor(7, 'expiry', 'running', 'ready')).toThrow(InvariantError);
    expect(() => edgeFor(7, 'claim', 'uncertain', 'running')).toThrow(/task 7: claim cannot move it uncertain -> running/);
    expect(() => edgeFor(7, 'complete', 'done', 'done')).toThrow(InvariantError);
    expect(() => edgeFor(7, 'cancel', null, 'cancelled')).toThrow(/\(new\) -> cancelled/);
  });

  it('gives every edge into or out of a slot-holding state the slot change that state implies', () => {
    for (const edge of EDGES) {
      const from = edge.from !== null && OCCUPYING_STATES.includes(edge.from);
      const to = OCCUPYING_STATES.includes(edge.to);
      expect(edge.slot, `${edge.event} ${edge.from} -> ${edge.to}`).toBe(from ? (to ? 'keep' : 'free') : to ? 'take' : undefined);
    }
  });

  // Migration 5 stores this text in every database; a change to the rules needs a new migration
  // that rebuilds the table again, never an edit of migration 5 (store/migrations.ts).
  it('derives the schema CHECK from the states and their row rules (pinned: changing it needs a new migration)', () => {
    expect(stateCheckSql()).toBe(
      "CONSTRAINT task_state_machine CHECK (CASE state WHEN 'ready' THEN (TRUE) " +
        "WHEN 'running' THEN (worker_id IS NOT NULL AND generation >= 1 AND claimed_at IS NOT NULL) " +
        "WHEN 'uncertain' THEN (worker_id IS NOT NULL AND generation >= 1) " +
        "WHEN 'done' THEN (finished_at IS NOT NULL AND (hold_state IS NULL OR hold_state <> 'held') AND result IS NOT NULL AND outcome IS NOT NULL) " +
        "WHEN 'failed' THEN (finished_at IS NOT NULL AND (hold_state IS NULL OR hold_state <> 'held')) " +
        "WHEN 'superseded' THEN (finished_at IS NOT NULL AND (hold_state IS NULL OR hold_state <> 'held')) " +
        "WHEN 'cancelled' THEN (finished_at IS NOT NULL AND (hold_state IS NULL OR hold_state <> 'held')) " +
        "WHEN 'expired' THEN (finished_at IS NOT NULL AND (hold_state IS NULL OR hold_state <> 'held')) " +
        'ELSE FALSE END),\n        ' +
        "CONSTRAINT task_lease CHECK ((lease_until IS NOT NULL) = (state IN ('running', 'uncertain')))",
    );
    expect(Object.keys(ROW_RULES)).toEqual([...STATES]);
  });
});

/**
 * The store contract suite's harness (store/contract/__test-helpers__/harness.ts) calls StoreTx methods directly,
 * taskWriteState and taskCreate included, as a test of each statement must: test code, like the *.test.ts
 * files left out below, not a writer of the queue's states.
 */
const TEST_ONLY_FOLDERS = new Set([join(SRC, 'store', 'contract')]);

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) return TEST_ONLY_FOLDERS.has(path) ? [] : sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('nothing but transition() writes tasks.state', () => {
  const files = sourceFiles(SRC).map((path) => ({ path: relative(SRC, path), text: readFileSync(path, 'utf8') }));

  it('keeps every SQL text that sets or inserts a state in the catalogue’s task writes (store/sql/task-writes.ts)', () => {
    const writers = files.flatMap(({ path, text }) =>
      [...text.matchAll(/(UPDATE\s+tasks\s+SET[^`]*?\bstate\s*=|INSERT\s+INTO\s+tasks\s*\()/g)].map((match) => {
        const line = text.slice(0, match.index).split('\n').length;
        return `${path}:${line}`;
      }),
    );
    expect(writers.length).toBeGreaterThan(0);
    for (const writer of writers) expect(writer, 'a state write outside the catalogue\'s task writes').toMatch(/^store\/sql\/task-writes\.ts:/);
  });

  it('runs the state-writing statements from taskWriteState and taskCreate alone, on both stores', () => {
    const statements = Object.entries(taskWrites as Record<string, unknown>).filter(
      (entry): entry is [string, Statement<string, unknown>] => typeof entry[1] === 'object' && entry[1] !== null && 'sqlite' in entry[1] && 'postgres' in entry[1],
    );
    const stateWriting = /UPDATE\s+tasks\s+SET[\s\S]*?\bstate\s*=|INSERT\s+INTO\s+tasks\s*\(/;
    const names = statements.filter(([, statement]) => stateWriting.test(statement.sqlite.text) && stateWriting.test(statement.postgres.text)).map(([name]) => name);
    expect(names.sort()).toEqual([
      'holderComplete',
      'holderCompleteHoldClosed',
      'holderLeave',
      'holderLeaveClosingHold',
      'taskClaim',
      'taskInsert',
      'taskInsertAs',
      'taskInsertEnded',
      'taskMove',
      'taskMoveClosingHold',
    ]);
    // The file's code, comments aside: a name is used where it is neither declared (`const name =`) nor quoted (its own `'name'`).
    const writes = files.find((file) => file.path === 'store/sql/task-writes.ts')!.text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, '');
    const body = (method: string) => {
      const start = writes.search(new RegExp(`^  ${method}\\(`, 'm'));
      expect(start, method).toBeGreaterThan(0);
      return writes.slice(start, writes.indexOf('\n  },\n', start));
    };
    const runners = `${body('taskWriteState')}\n${body('taskCreate')}`;
    for (const name of names) {
      const use = () => new RegExp(`(?<!const |')\\b${name}\\b(?!')`, 'g');
      const uses = [...writes.matchAll(use())].length;
      expect(uses, `${name} is run outside taskWriteState/taskCreate`).toBe([...runners.matchAll(use())].length);
      expect(uses, `${name} is never run`).toBeGreaterThan(0);
      // No other source file names it (the statement classes run only what the operations hand them).
      const elsewhere = files.filter(({ path, text }) => path !== 'store/sql/task-writes.ts' && new RegExp(`\\b${name}\\b`).test(text)).map(({ path }) => path);
      expect(elsewhere, name).toEqual([]);
    }
  });

  it('calls the store’s state writes from queue/transition.ts alone', () => {
    const callers = files.filter(({ text }) => /\.(taskWriteState|taskCreate)\(/.test(text)).map(({ path }) => path);
    expect(callers).toEqual(['queue/transition.ts']);
  });
});
