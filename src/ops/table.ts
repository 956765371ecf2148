/**
 * O1: tables for people, fitted to the terminal. A value from the database is shown as text: control
 * characters (an escape sequence in a tenant name would rewrite the operator's terminal) are replaced,
 * and a cell too long for its column is cut with an ellipsis. Columns marked `flex` give up width first,
 * widest first, down to their header's width (at least 6); the others keep theirs. Colour only when
 * asked (a terminal, and NO_COLOR unset: see terminalStyle).
 */

export type Tone = 'red' | 'yellow' | 'green' | 'cyan' | 'dim' | 'bold';

export interface Cell {
  text: string;
  tone?: Tone;
}

export interface Column {
  header: string;
  align?: 'left' | 'right';
  /** May be cut to fit the width. */
  flex?: boolean;
}

export interface TextStyle {
  /** Columns available; Infinity when the output is not a terminal and COLUMNS is unset. */
  width: number;
  color: boolean;
}

const TONES: Record<Tone, string> = { red: '31', yellow: '33', green: '32', cyan: '36', dim: '2', bold: '1' };

/** How this process should write for people: the terminal's width (else COLUMNS, else unlimited) and colour unless NO_COLOR. */
export function terminalStyle(stream: { isTTY?: boolean; columns?: number }, env: Readonly<Record<string, string | undefined>>): TextStyle {
  const fromEnv = Number(env.COLUMNS);
  const width = stream.isTTY === true && typeof stream.columns === 'number' && stream.columns > 0 ? stream.columns : Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : Number.POSITIVE_INFINITY;
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
  return { width, color: stream.isTTY === true && !noColor && env.TERM !== 'dumb' };
}

/** A database value as one line of safe text: control characters (C0, DEL, C1) become U+FFFD, line breaks a space. */
export function safeText(value: unknown): string {
  const text = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value) ?? String(value);
  return text.replace(/[\r\n\t]/g, ' ').replace(/[\u0000-\u001f\u007f-\u009f]/g, '\ufffd');
}

export function paint(text: string, tone: Tone | undefined, style: TextStyle): string {
  return tone === undefined || !style.color ? text : `\u001b[${TONES[tone]}m${text}\u001b[0m`;
}

/** The text cut to `width` characters, its end an ellipsis when cut. */
export function cut(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

const GAP = 2;

/** The columns' widths: each its widest cell, then the flex ones cut, widest first, until the row fits `width`. */
export function fitWidths(columns: readonly Column[], rows: readonly (readonly Cell[])[], width: number): number[] {
  const widths = columns.map((column, index) => Math.max(column.header.length, ...rows.map((row) => row[index]?.text.length ?? 0)));
  const floor = columns.map((column) => Math.max(column.header.length, 6));
  let over = widths.reduce((sum, w) => sum + w, 0) + GAP * (columns.length - 1) - width;
  while (over > 0) {
    let widest = -1;
    columns.forEach((column, index) => {
      if (column.flex === true && widths[index]! > floor[index]! && (widest < 0 || widths[index]! > widths[widest]!)) widest = index;
    });
    if (widest < 0) break;
    widths[widest]! -= 1;
    over -= 1;
  }
  return widths;
}

/** The table's lines: a header, then a row per item; an empty table is its header and `(none)`. */
export function renderTable(columns: readonly Column[], rows: readonly (readonly (Cell | string)[])[], style: TextStyle): string[] {
  const cells = rows.map((row) => row.map((cell) => (typeof cell === 'string' ? { text: safeText(cell) } : { ...cell, text: safeText(cell.text) })));
  const widths = fitWidths(columns, cells, style.width);
  const line = (row: readonly Cell[]) =>
    columns
      .map((column, index) => {
        const cell = row[index] ?? { text: '' };
        const text = cut(cell.text, widths[index]!);
        const padded = column.align === 'right' ? text.padStart(widths[index]!) : index === columns.length - 1 ? text : text.padEnd(widths[index]!);
        return paint(padded, cell.tone, style);
      })
      .join(' '.repeat(GAP));
  const header = line(columns.map((column) => ({ text: column.header, tone: 'bold' as const })));
  return [header, ...(cells.length === 0 ? [paint('(none)', 'dim', style)] : cells.map(line))];
}

/** A duration for people: 850ms, 12.3s, 4m 05s, 2h 07m, 3d 04h. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const sign = ms < 0 ? '-' : '';
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${sign}${Math.round(abs)}ms`;
  if (abs < 60_000) return `${sign}${(abs / 1_000).toFixed(1)}s`;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (abs < 3_600_000) return `${sign}${Math.floor(abs / 60_000)}m ${pad(Math.floor(abs / 1_000) % 60)}s`;
  if (abs < 86_400_000) return `${sign}${Math.floor(abs / 3_600_000)}h ${pad(Math.floor(abs / 60_000) % 60)}m`;
  return `${sign}${Math.floor(abs / 86_400_000)}d ${pad(Math.floor(abs / 3_600_000) % 24)}h`;
}

/** An instant as ISO 8601 in UTC, to the second. */
export function instant(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'); // allow-ambient: formats the instant given, reads no clock
}

/** A paragraph wrapped to the width, for prose lines (alerts, messages). */
export function wrap(text: string, width: number, indent = ''): string[] {
  if (!Number.isFinite(width)) return [indent + text];
  const room = Math.max(20, width - indent.length);
  const lines: string[] = [];
  let current = '';
  for (const word of text.split(' ')) {
    if (current !== '' && current.length + 1 + word.length > room) {
      lines.push(indent + current);
      current = word;
    } else current = current === '' ? word : `${current} ${word}`;
  }
  lines.push(indent + current);
  return lines;
}
