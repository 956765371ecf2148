/**
 * Holds src/'s coverage to the floors in .ci/coverage-floor.json: the suite's own (`npm test --
 * --coverage` writes reports/coverage/unit/coverage-summary.json) and the gate's (tools/coverage/gate.ts
 * writes reports/coverage/gate-summary.json). Exits 1 when a measured figure is under its floor.
 * `--raise` moves a floor up to the measured figure less its suite's margin (rounded down to 0.1) when
 * that is higher; a floor never falls. The margins are measured run-to-run spread, not slack: the
 * suite's branch coverage moved 0.23 points between two clean-clone runs of one commit (fast-check
 * draws new cases each run), and the gate's seeds change with every commit.
 *
 *   npx tsx tools/coverage/floor.ts [--raise] [--unit FILE] [--gate FILE]
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

const REPO = resolve(import.meta.dirname, '..', '..');
const FLOOR_FILE = resolve(REPO, '.ci/coverage-floor.json');
const USAGE = 'usage: npx tsx tools/coverage/floor.ts [--raise] [--unit coverage-summary.json] [--gate gate-summary.json]';

type Figures = { lines: number; branches: number };
interface FloorFile {
  _comment?: string;
  unit: Figures;
  gate: Figures;
}

export interface Verdict {
  suite: 'unit' | 'gate';
  metric: keyof Figures;
  measured: number;
  floor: number;
}

/** Every (suite, metric) measured, against its floor; `below` lists those under it. */
export function judge(floors: FloorFile, measured: Partial<Record<'unit' | 'gate', Figures>>): { verdicts: Verdict[]; below: Verdict[] } {
  const verdicts: Verdict[] = [];
  for (const suite of ['unit', 'gate'] as const) {
    const figures = measured[suite];
    if (figures === undefined) continue;
    for (const metric of ['lines', 'branches'] as const) verdicts.push({ suite, metric, measured: figures[metric], floor: floors[suite][metric] });
  }
  return { verdicts, below: verdicts.filter((verdict) => verdict.measured < verdict.floor) };
}

/** How far under a measured figure `--raise` puts its floor, in points, per suite. */
export const MARGIN = { unit: 0.5, gate: 3 } as const;

/** The floors after `--raise`: each the higher of itself and (measured - margin) rounded down to 0.1. */
export function raised(floors: FloorFile, verdicts: readonly Verdict[]): FloorFile {
  const next: FloorFile = structuredClone(floors);
  for (const { suite, metric, measured } of verdicts) {
    next[suite][metric] = Math.max(next[suite][metric], Math.floor((measured - MARGIN[suite]) * 10) / 10);
  }
  return next;
}

function readUnit(path: string): Figures | undefined {
  if (!existsSync(path)) return undefined;
  const summary = JSON.parse(readFileSync(path, 'utf8')) as { total: { lines: { pct: number }; branches: { pct: number } } };
  return { lines: summary.total.lines.pct, branches: summary.total.branches.pct };
}

function readGate(path: string): Figures | undefined {
  if (!existsSync(path)) return undefined;
  const summary = JSON.parse(readFileSync(path, 'utf8')) as Figures;
  return { lines: summary.lines, branches: summary.branches };
}

function main(): number {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        raise: { type: 'boolean' },
        unit: { type: 'string', default: resolve(REPO, 'reports/coverage/unit/coverage-summary.json') },
        gate: { type: 'string', default: resolve(REPO, 'reports/coverage/gate-summary.json') },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    process.stderr.write(`coverage floor: ${(error as Error).message}\n${USAGE}\n`);
    return 64;
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const floors = JSON.parse(readFileSync(FLOOR_FILE, 'utf8')) as FloorFile;
  const measured: Partial<Record<'unit' | 'gate', Figures>> = {};
  const unit = readUnit(values.unit);
  const gate = readGate(values.gate);
  if (unit !== undefined) measured.unit = unit;
  if (gate !== undefined) measured.gate = gate;
  if (unit === undefined && gate === undefined) {
    process.stderr.write(`coverage floor: no coverage summary found (looked for ${values.unit} and ${values.gate})\n`);
    return 64;
  }
  const { verdicts, below } = judge(floors, measured);
  for (const verdict of verdicts) {
    const mark = verdict.measured < verdict.floor ? 'BELOW' : 'ok';
    process.stdout.write(`${verdict.suite} ${verdict.metric}: ${verdict.measured}% (floor ${verdict.floor}%) ${mark}\n`);
  }
  if (values.raise === true) {
    writeFileSync(FLOOR_FILE, `${JSON.stringify(raised(floors, verdicts), null, 2)}\n`);
    process.stdout.write(`floors raised where measured higher: ${FLOOR_FILE}\n`);
  }
  return below.length === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) process.exitCode = main();
