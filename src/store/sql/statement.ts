/**
 * One statement of the store, declared once for both SQL dialects (issue 36 item 1), as River declares
 * its queries once per driver in `dbsqlc/*.sql` (`-- name: JobGetByID :one`, `@id`): a stable name, the
 * SQL text with named parameters, the names it takes, the shape of its answer, and whether it writes.
 *
 * Named parameters are written `:name` (letters, digits and `_`, starting with a letter or `_`), as
 * SQLite spells them; a `::` cast is not one, and neither is anything inside a quoted literal or
 * identifier, or a comment. Positional parameters (`?`, `$1`) are refused: a parameter is always named.
 *
 * Each declaration is rendered for both dialects when its module loads, and checked there, so a mistake
 * fails the import, never a call: the parameters the text uses must be exactly those declared (a missing
 * or extra one is named in the error), the text must read or write as declared, a `{ sqlite, postgres }`
 * pair must say why its texts differ and must really differ, and names are unique. Rendering:
 *   - SQLite: each name replaced by `?`, one slot for every place a name appears (SQLite's numbered
 *     `?n` would bind once per name, but better-sqlite3 treats it as a name and refuses values by
 *     position); the runner binds the values in that order (`sqlite.order`). better-sqlite3 binds
 *     positions about twice as fast as names (a named value is looked up on the object by its name,
 *     in C++, for each parameter): on the claim cycle's 14 statements that was about 3 µs a cycle, measured.
 *   - PostgreSQL: each name replaced by `$n`, numbered in order of first appearance, once; the runner
 *     sends the values in that order (`postgres.order`).
 *
 * The runners that execute a declaration are the dialects' own: SqliteStatements (statements.ts) and
 * PgStatements (pg-statements.ts, which keeps its round-trip batching: a write whose answer is not
 * awaited waits for the next round trip or COMMIT). Time is a parameter, never the database's clock.
 */

/** A value a statement is bound with. */
export type SqlValue = string | number | null;

/** The parameters of a statement: every declared name, each with its value. */
export type Params<K extends string> = { readonly [P in K]: SqlValue };

/**
 * What a statement answers: `rows` every row, `one` the first row or undefined, `pluck` the first
 * column of the first row or undefined, `changes` how many rows a write changed, `inserted` the id of
 * the row an INSERT added (SQLite's rowid, as better-sqlite3 reports it without a RETURNING clause;
 * on PostgreSQL, which has no rowid, the column its text RETURNs).
 */
export type ResultShape = 'rows' | 'one' | 'pluck' | 'changes' | 'inserted';

/**
 * The same statement in two texts, where the dialects must differ: `necessity` says why, beginning
 * "Differs by necessity: " (checked), so every pair carries its reason beside it.
 */
export interface DialectPair {
  readonly sqlite: string;
  readonly postgres: string;
  readonly necessity: string;
}

export interface RenderedPostgres {
  /** The text with `$1..$n` in place of the names. */
  readonly text: string;
  /** The parameter name of `$1`, `$2`, ...: the order the values are sent in. */
  readonly order: readonly string[];
}

export interface RenderedSqlite {
  /** The text with `?` in place of each name. */
  readonly text: string;
  /** The parameter name of each `?`, in order (a name used twice is in it twice): the order the values are bound in. */
  readonly order: readonly string[];
}

/** A declared statement: `K` its parameter names, `R` its answer as the runner gives it. */
export interface Statement<K extends string, R> {
  /** Stable and unique (case-insensitively): the prepared statement's name on PostgreSQL is `leasehold_<name>`. */
  readonly name: string;
  readonly params: readonly K[];
  readonly result: ResultShape;
  /** Whether it changes data: on PostgreSQL a write forgets what was read ahead; a read may be answered from it. */
  readonly writes: boolean;
  /** The text better-sqlite3 prepares, its values bound by position. */
  readonly sqlite: RenderedSqlite;
  readonly postgres: RenderedPostgres;
  /** A small integer of its own, for a connection's cache of prepared statements. */
  readonly index: number;
  /** The answer's type, for the compiler only. */
  readonly answer?: R;
}

/** A write whose answer is its changes count: what a runner may send without waiting for the answer. */
export type Write<K extends string> = Statement<K, number> & { readonly result: 'changes' };

/** A declaration that does not hold: thrown when its module loads. */
export class StatementError extends Error {
  constructor(
    readonly statement: string,
    problem: string,
  ) {
    super(`statement ${statement}: ${problem}`);
    this.name = 'StatementError';
  }
}

/** One piece of a statement's text: SQL outside quotes and comments, a quoted or commented piece, or a named parameter. */
type Piece = { kind: 'sql' | 'quoted'; text: string } | { kind: 'param'; name: string };

const NAME_START = /[A-Za-z_]/;
const NAME_PART = /[A-Za-z0-9_]/;

/** Splits a text into SQL, quoted/commented pieces and named parameters; a positional parameter is an error. */
export function tokenize(statement: string, text: string): Piece[] {
  const pieces: Piece[] = [];
  let sql = '';
  const flush = () => {
    if (sql !== '') pieces.push({ kind: 'sql', text: sql });
    sql = '';
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    let end = -1;
    if (c === "'" || c === '"') {
      // A quoted literal or identifier; a doubled quote inside it is the quote itself.
      end = i + 1;
      for (;;) {
        const close = text.indexOf(c, end);
        if (close < 0) throw new StatementError(statement, `an unterminated ${c} quote at offset ${i}`);
        if (text[close + 1] === c) end = close + 2;
        else {
          end = close + 1;
          break;
        }
      }
    } else if (c === '-' && next === '-') {
      const close = text.indexOf('\n', i);
      end = close < 0 ? text.length : close;
    } else if (c === '/' && next === '*') {
      const close = text.indexOf('*/', i + 2);
      if (close < 0) throw new StatementError(statement, `an unterminated comment at offset ${i}`);
      end = close + 2;
    }
    if (end >= 0) {
      flush();
      pieces.push({ kind: 'quoted', text: text.slice(i, end) });
      i = end;
      continue;
    }
    if (c === ':' && next === ':') {
      // A PostgreSQL cast: `::text`.
      sql += '::';
      i += 2;
      continue;
    }
    if (c === ':' && next !== undefined && NAME_START.test(next)) {
      let j = i + 1;
      while (j < text.length && NAME_PART.test(text[j]!)) j++;
      flush();
      pieces.push({ kind: 'param', name: text.slice(i + 1, j) });
      i = j;
      continue;
    }
    if (c === '?' || (c === '$' && next !== undefined && /[0-9]/.test(next))) {
      throw new StatementError(statement, `a positional parameter (${c === '?' ? '?' : text.slice(i, i + 2)}) at offset ${i}: name every parameter (:name)`);
    }
    sql += c;
    i++;
  }
  flush();
  return pieces;
}

/** The names a text uses, each once, in order of first appearance. */
function namesOf(pieces: readonly Piece[]): string[] {
  const names: string[] = [];
  for (const piece of pieces) if (piece.kind === 'param' && !names.includes(piece.name)) names.push(piece.name);
  return names;
}

/** The SQL of a text with quoted pieces blanked: what the read/write check looks at. */
function bareSql(pieces: readonly Piece[]): string {
  return pieces.map((piece) => (piece.kind === 'sql' ? piece.text : ' ')).join('');
}

/** Checks that a text uses exactly the declared parameters; `dialect` names the text in the error. */
function checkParams(statement: string, dialect: string, pieces: readonly Piece[], declared: readonly string[]): void {
  const used = namesOf(pieces);
  const missing = declared.filter((name) => !used.includes(name));
  const extra = used.filter((name) => !declared.includes(name));
  const problems = [
    ...(missing.length > 0 ? [`declares ${missing.map((name) => `:${name}`).join(', ')} but its ${dialect} text does not use ${missing.length === 1 ? 'it' : 'them'}`] : []),
    ...(extra.length > 0 ? [`its ${dialect} text uses ${extra.map((name) => `:${name}`).join(', ')}, not declared`] : []),
  ];
  if (problems.length > 0) throw new StatementError(statement, problems.join('; '));
  if (new Set(declared).size !== declared.length) throw new StatementError(statement, 'declares a parameter twice');
}

/** Checks that a text reads or writes as declared. */
function checkKind(statement: string, dialect: string, pieces: readonly Piece[], writes: boolean, result: ResultShape): void {
  const sql = bareSql(pieces);
  const writing = /\b(INSERT|UPDATE|DELETE)\b/i.test(sql);
  if (writes && !writing) throw new StatementError(statement, `declared a write, but its ${dialect} text has no INSERT, UPDATE or DELETE`);
  if (!writes && (writing || !/^\s*(SELECT|WITH)\b/i.test(sql))) throw new StatementError(statement, `declared a read, but its ${dialect} text is not a SELECT that writes nothing`);
  if (result === 'changes' && !writes) throw new StatementError(statement, 'a changes count is the answer of a write');
  if (result === 'inserted' && (!writes || !/\bINSERT\b/i.test(sql))) throw new StatementError(statement, `an inserted id is the answer of an INSERT, and its ${dialect} text has none`);
  if (result === 'inserted' && dialect === 'PostgreSQL' && !/\bRETURNING\b/i.test(sql)) throw new StatementError(statement, 'an inserted id on PostgreSQL is the column its text RETURNs, and it has no RETURNING');
  if (result === 'inserted' && dialect === 'SQLite' && /\bRETURNING\b/i.test(sql)) throw new StatementError(statement, 'an inserted id on SQLite is its rowid, reported without a RETURNING');
}

/** PostgreSQL's text: each name as `$n`, numbered by first appearance. */
function renderPostgres(pieces: readonly Piece[]): RenderedPostgres {
  const order = namesOf(pieces);
  const text = pieces.map((piece) => (piece.kind === 'param' ? `$${order.indexOf(piece.name) + 1}` : piece.text)).join('');
  return { text, order };
}

/**
 * The value of parameter `name` for `declared`: a missing one is an error naming both, never a NULL
 * (each runner binds by position, where a hole would be written as NULL without a word).
 */
export function paramValue(declared: Statement<string, unknown>, params: Readonly<Record<string, unknown>>, name: string): SqlValue {
  const value = params[name];
  if (value === undefined) throw new TypeError(`statement ${declared.name}: no value for :${name}`);
  return value as SqlValue;
}

/** SQLite's text: each name as `?`, a slot for each place it appears. */
function renderSqlite(pieces: readonly Piece[]): RenderedSqlite {
  const order: string[] = [];
  const text = pieces
    .map((piece) => {
      if (piece.kind !== 'param') return piece.text;
      order.push(piece.name);
      return '?';
    })
    .join('');
  return { text, order };
}

/** Every name declared so far, lower-cased (PostgreSQL folds an unquoted prepared statement's name). */
const declaredNames = new Map<string, string>();
let nextIndex = 0;

/** Declares a statement: renders and checks it (throws StatementError when it does not hold). */
export function declare<K extends string, R>(name: string, params: readonly K[], result: ResultShape, writes: boolean, sql: string | DialectPair): Statement<K, R> {
  if (!/^[a-z][A-Za-z0-9]*$/.test(name)) throw new StatementError(name, 'a name is a camelCase identifier (it names a prepared statement)');
  const taken = declaredNames.get(name.toLowerCase());
  if (taken !== undefined) throw new StatementError(name, `the name is taken (by ${taken}): names are unique, case-insensitively`);
  const texts = typeof sql === 'string' ? { sqlite: sql, postgres: sql } : sql;
  if (typeof sql !== 'string') {
    if (!/^Differs by necessity: \S/.test(sql.necessity)) throw new StatementError(name, 'a { sqlite, postgres } pair says why, beginning "Differs by necessity: "');
    if (sql.sqlite === sql.postgres) throw new StatementError(name, 'its two texts are the same: declare it once');
  }
  const sqlitePieces = tokenize(name, texts.sqlite);
  const postgresPieces = tokenize(name, texts.postgres);
  for (const [dialect, pieces] of [['SQLite', sqlitePieces], ['PostgreSQL', postgresPieces]] as const) {
    checkParams(name, dialect, pieces, params);
    checkKind(name, dialect, pieces, writes, result);
  }
  declaredNames.set(name.toLowerCase(), name);
  return { name, params, result, writes, sqlite: renderSqlite(sqlitePieces), postgres: renderPostgres(postgresPieces), index: nextIndex++ };
}

/**
 * The declarations, by what they answer: `read(name, params).rows<Row>(sql)`,
 * `write(name, params).changes(sql)`, `write(name, params).pluck<number>(sql)` for a RETURNING column.
 */
function builder<const K extends string>(name: string, params: readonly K[], writes: boolean) {
  return {
    rows: <R>(sql: string | DialectPair): Statement<K, R[]> => declare<K, R[]>(name, params, 'rows', writes, sql),
    one: <R>(sql: string | DialectPair): Statement<K, R | undefined> => declare<K, R | undefined>(name, params, 'one', writes, sql),
    pluck: <R>(sql: string | DialectPair): Statement<K, R | undefined> => declare<K, R | undefined>(name, params, 'pluck', writes, sql),
  };
}

/** A statement that only reads. */
export function read<const K extends string = never>(name: string, params: readonly K[] = []) {
  return builder(name, params, false);
}

/** A statement that writes: its changes count, or what it RETURNs. */
export function write<const K extends string = never>(name: string, params: readonly K[] = []) {
  return {
    ...builder(name, params, true),
    changes: (sql: string | DialectPair): Write<K> => declare<K, number>(name, params, 'changes', true, sql) as Write<K>,
    /** The id of the row the INSERT added, or undefined when it added none. */
    inserted: (sql: string | DialectPair): Statement<K, number | undefined> => declare<K, number | undefined>(name, params, 'inserted', true, sql),
  };
}

/** The names declared so far (PgStatements checks its own statements' names against them). */
export function declaredStatementNames(): ReadonlySet<string> {
  return new Set(declaredNames.keys());
}
