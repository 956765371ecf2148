/**
 * The floor contender: raw SQLite autocommit transactions, one single-row UPDATE each, prepared once,
 * on its own WAL file database with synchronous=NORMAL (the same settings the queue runs on).
 */
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import type { Contender } from './interleave.ts';
import { openWalDatabase, readSettings, type DbSettings } from './timing.ts';

const ROWS = 8;

export class RawSqliteContender implements Contender {
  readonly name = 'raw-sqlite';
  private readonly db: Database.Database;
  private readonly update: Database.Statement;
  private readonly sum: Database.Statement;
  private ok = 0;
  private next = 0;

  constructor(dir: string) {
    this.db = openWalDatabase(join(dir, 'raw.sqlite'));
    this.db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)');
    const insert = this.db.prepare('INSERT INTO t (id, v) VALUES (?, 0)');
    for (let id = 1; id <= ROWS; id++) insert.run(id);
    this.update = this.db.prepare('UPDATE t SET v = v + 1 WHERE id = ?');
    this.sum = this.db.prepare('SELECT sum(v) AS s FROM t');
  }

  prepare(): void {}

  run(n: number): void {
    const update = this.update;
    let next = this.next;
    let changed = 0;
    for (let i = 0; i < n; i++) {
      changed += update.run((next % ROWS) + 1).changes;
      next++;
    }
    this.next = next;
    if (changed !== n) throw new Error(`raw-sqlite: ${n - changed} updates changed no row`);
    this.ok += n;
  }

  okCount(): number {
    return this.ok;
  }

  /** The committed total must equal the updates counted: the benchmark measured real commits. */
  verify(): void {
    const s = (this.sum.get() as { s: number }).s;
    if (s !== this.ok) throw new Error(`raw-sqlite: table sum ${s} != ${this.ok} updates`);
  }

  settings(): DbSettings {
    return readSettings(this.db);
  }

  close(): void {
    this.db.close();
  }
}
