/**
 * The statement catalogue's declarations (sql/statement.ts): how a neutral text is rendered for each
 * dialect, and that a declaration that does not hold fails when it is declared (its module's load),
 * naming what is wrong, never when it runs.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteStatements } from '../statements.ts';
import { OPERATIONS } from './index.ts';
import { read, StatementError, tokenize, write } from './statement.ts';

/** A name no other test of this file takes (names are unique in a process). */
let counter = 0;
const fresh = (stem: string) => `${stem}T${counter++}`;

describe('rendering a declared statement', () => {
  it('numbers PostgreSQL parameters by first appearance, reusing a name once numbered, and gives SQLite a ? for every place a name appears', () => {
    const text = 'INSERT INTO checkpoints (task_id, seq, at) VALUES (:task_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE task_id = :task_id), :at)';
    const statement = write(fresh('checkpointPut'), ['at', 'task_id']).pluck<number>(text);
    expect(statement.sqlite.text).toBe('INSERT INTO checkpoints (task_id, seq, at) VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE task_id = ?), ?)');
    expect(statement.sqlite.order).toEqual(['task_id', 'task_id', 'at']);
    expect(statement.postgres.order).toEqual(['task_id', 'at']);
    expect(statement.postgres.text).toBe(
      'INSERT INTO checkpoints (task_id, seq, at) VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE task_id = $1), $2)',
    );
    expect(statement.result).toBe('pluck');
    expect(statement.writes).toBe(true);
  });

  it('leaves casts, quoted text, quoted identifiers and comments alone', () => {
    const statement = read(fresh('signalRead'), ['name']).one(
      `SELECT value::text AS "v:alue", ':not_a_param' AS q, 'it''s :x' AS r -- :comment
       FROM signal_counters /* :nor_this */ WHERE name = :name`,
    );
    expect(statement.postgres.order).toEqual(['name']);
    expect(statement.postgres.text).toContain('WHERE name = $1');
    expect(statement.postgres.text).toContain(`value::text AS "v:alue", ':not_a_param' AS q, 'it''s :x' AS r -- :comment`);
    expect(statement.sqlite.order).toEqual(['name']);
    expect(statement.sqlite.text).toContain('WHERE name = ?');
    expect(statement.sqlite.text).toContain(`value::text AS "v:alue", ':not_a_param' AS q, 'it''s :x' AS r -- :comment`);
  });

  it('takes a { sqlite, postgres } pair with its reason, rendering each text for its dialect', () => {
    const statement = write(fresh('pairPut'), ['a']).changes({
      sqlite: 'INSERT OR IGNORE INTO t (a) VALUES (:a)',
      postgres: 'INSERT INTO t (a) VALUES (:a::bigint) ON CONFLICT DO NOTHING',
      necessity: 'Differs by necessity: a test of the pair.',
    });
    expect(statement.sqlite.text).toBe('INSERT OR IGNORE INTO t (a) VALUES (?)');
    expect(statement.postgres.text).toBe('INSERT INTO t (a) VALUES ($1::bigint) ON CONFLICT DO NOTHING');
  });

  it('binds the values in ? order on SQLite and in $n order on PostgreSQL', () => {
    const statement = read(fresh('bindRead'), ['b', 'a']).rows<{ x: number; y: string }>('SELECT :a AS x, :b AS y, :a + 1 AS z');
    const db = new Database(':memory:');
    try {
      const params: Record<string, number | string> = { a: 1, b: 'two' };
      expect(db.prepare(statement.sqlite.text).all(statement.sqlite.order.map((name) => params[name]))).toEqual([{ x: 1, y: 'two', z: 2 }]);
      // SQLite's runner binds the same way, and refuses a value that is missing: bound by position, it would be NULL.
      const runner = new SqliteStatements(db);
      expect(runner.run(statement, { a: 1, b: 'two' }).next()).toEqual({ done: true, value: [{ x: 1, y: 'two', z: 2 }] });
      expect(() => runner.run(statement, { a: 1 } as never)).toThrow(`statement ${statement.name}: no value for :b`);
      db.exec('CREATE TABLE kept (v)');
      const put = write(fresh('keptPut'), ['v']).changes('INSERT INTO kept (v) VALUES (:v)');
      expect(() => runner.send(put, {} as never)).toThrow(/no value for :v/);
      expect(db.prepare('SELECT COUNT(*) AS n FROM kept').get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
    expect(statement.postgres.text).toBe('SELECT $1 AS x, $2 AS y, $1 + 1 AS z');
    expect(statement.postgres.order).toEqual(['a', 'b']);
  });
});

describe('a declaration that does not hold fails at load, naming the fault', () => {
  const fault = (declare: () => unknown) => {
    try {
      declare();
    } catch (error) {
      expect(error).toBeInstanceOf(StatementError);
      return (error as Error).message;
    }
    throw new Error('the declaration was accepted');
  };

  it('a parameter declared but not used', () => {
    expect(fault(() => read(fresh('missingRead'), ['task_id', 'at']).rows('SELECT * FROM events WHERE task_id = :task_id'))).toMatch(
      /declares :at but its SQLite text does not use it/,
    );
  });

  it('a parameter used but not declared', () => {
    expect(fault(() => read(fresh('extraRead'), ['task_id']).rows('SELECT * FROM events WHERE task_id = :task_id AND at > :at'))).toMatch(
      /its SQLite text uses :at, not declared/,
    );
  });

  it('a parameter only one text of a pair uses', () => {
    const message = fault(() =>
      write(fresh('pairMiss'), ['a', 'b']).changes({ sqlite: 'UPDATE t SET a = :a, b = :b', postgres: 'UPDATE t SET a = :a', necessity: 'Differs by necessity: a test.' }),
    );
    expect(message).toMatch(/declares :b but its PostgreSQL text does not use it/);
  });

  it('a positional parameter', () => {
    expect(fault(() => read(fresh('positionalRead'), []).rows('SELECT * FROM events WHERE task_id = ?'))).toMatch(/positional parameter \(\?\)/);
    expect(fault(() => read(fresh('dollarRead'), []).rows('SELECT * FROM events WHERE task_id = $1'))).toMatch(/positional parameter \(\$1\)/);
  });

  it('a read that writes, a write that does not, a changes count of a read', () => {
    expect(fault(() => read(fresh('readWrites')).rows('DELETE FROM events RETURNING id'))).toMatch(/declared a read/);
    expect(fault(() => write(fresh('writeReads')).changes('SELECT 1'))).toMatch(/declared a write/);
  });

  it('an inserted id of a text that inserts nothing, of a PostgreSQL text that RETURNs nothing, or of a SQLite text that RETURNs', () => {
    expect(fault(() => write(fresh('insertedUpdate')).inserted('UPDATE t SET a = 1 RETURNING id'))).toMatch(/an inserted id is the answer of an INSERT/);
    const pair = (sqlite: string, postgres: string) => ({ sqlite, postgres, necessity: 'Differs by necessity: a test.' });
    expect(fault(() => write(fresh('insertedNoReturning')).inserted('INSERT INTO t (a) VALUES (1)'))).toMatch(/PostgreSQL is the column its text RETURNs/);
    expect(fault(() => write(fresh('insertedSqliteReturning')).inserted('INSERT INTO t (a) VALUES (1) RETURNING id'))).toMatch(/SQLite is its rowid/);
    const statement = write(fresh('insertedPair')).inserted(pair('INSERT INTO t (a) VALUES (1)', 'INSERT INTO t (id, a) VALUES (2, 1) RETURNING id'));
    expect(statement.result).toBe('inserted');
  });

  it('a pair without its reason, or whose texts are the same', () => {
    expect(fault(() => read(fresh('pairNoWhy')).rows({ sqlite: 'SELECT 1', postgres: 'SELECT 2', necessity: 'because' }))).toMatch(/Differs by necessity/);
    expect(fault(() => read(fresh('pairSame')).rows({ sqlite: 'SELECT 1', postgres: 'SELECT 1', necessity: 'Differs by necessity: no.' }))).toMatch(/declare it once/);
  });

  it('a name taken already (case-insensitively), or not an identifier', () => {
    const name = fresh('takenRead');
    read(name).rows('SELECT 1');
    expect(fault(() => read(name.toUpperCase().toLowerCase()).rows('SELECT 1'))).toMatch(/the name is taken/);
    expect(fault(() => read('not-a-name').rows('SELECT 1'))).toMatch(/camelCase identifier/);
  });

  it('an unterminated quote', () => {
    expect(tokenize.bind(null, 'q', "SELECT 'x")).toThrow(StatementError);
  });
});

describe('the catalogue', () => {
  it('writes each of its operations once (both statement classes take them as their own)', () => {
    expect(Object.keys(OPERATIONS).length).toBeGreaterThan(0);
    for (const operation of Object.values(OPERATIONS)) expect(typeof operation).toBe('function');
  });
});
