/**
 * Where a simulated seed's CPU time goes, measured with V8's sampling profiler in the bench's own
 * process (node:inspector), for the floors of the two simulator targets (issue 20 item 5).
 *
 * Each sample is put in one class by the function on top of the stack (a native function by its nearest
 * caller with a script, classesOf below):
 *
 * - `sql`: src/store/statements.ts and better-sqlite3's own JavaScript. SQLite runs natively inside a
 *   statement call, and V8 attributes that time to the JavaScript function that made the call, which is
 *   one of the store's statement wrappers (or better-sqlite3's transaction wrapper, for BEGIN/COMMIT).
 * - `core`: any other file under src/: the queue, the worker runtime, the state machine. The simulator
 *   runs exactly this code (SPEC: src/ is what the simulator runs); no simulator can skip it.
 * - `checkers`: sim/checkers/, the invariants (S7: each a function of the history and the final database).
 * - `history`: sim/history.ts and sim/trace-hash.ts, the recorded operations and their hash (S6).
 * - `gc`, `idle`: the garbage collector, and the process waiting.
 * - `harness`: everything else: the rest of sim/ (actors, event loop, faults, world), Node's internals,
 *   the module loader.
 *
 * From these shares, a simulator that cost nothing beyond the core it runs (no history, no checkers, no
 * event loop, no allocation of its own, and the collector's time free as well) would still spend
 * (sql + core) of today's seed time; one that keeps what the SPEC asks of it besides (S6's history and
 * hash, S7's checkers) at today's cost, (sql + core + checkers + history); and if the core's own
 * JavaScript were free too, sql of it. Dividing a ratio measured against today's seed time by such a
 * share gives the best that ratio could be.
 */
import { Session } from 'node:inspector/promises';

export type CpuClass = 'sql' | 'core' | 'checkers' | 'history' | 'gc' | 'idle' | 'harness';

export const CPU_CLASSES: readonly CpuClass[] = ['sql', 'core', 'checkers', 'history', 'gc', 'idle', 'harness'];

export interface CpuShares {
  samples: number;
  /** Share of samples per class, summing to 1. */
  shares: Record<CpuClass, number>;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The class of one leaf frame (see the header). */
export function classOf(frame: ProfileNode['callFrame']): CpuClass {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'gc';
  if (functionName === '(idle)') return 'idle';
  if (url.includes('/node_modules/better-sqlite3/') || url.endsWith('/src/store/statements.ts')) return 'sql';
  if (url.includes('/node_modules/')) return 'harness';
  if (/\/src\/[^?#]*\.ts$/.test(url)) return 'core';
  if (url.includes('/sim/checkers/')) return 'checkers';
  if (/\/sim\/(history|trace-hash)\.ts$/.test(url)) return 'history';
  return 'harness';
}

/**
 * The class of a sampled node: its own frame's, except that a native or built-in function (no script
 * URL: better-sqlite3's Statement.run/get/all, Database.exec, a Map.get, runMicrotasks) takes the class
 * of the nearest caller that has one, since its time is spent on that caller's behalf. So SQLite's
 * native work counts as SQL when the store called it and as harness when the simulator did (its own
 * observation reads).
 */
function classesOf(profile: CpuProfile): Map<number, CpuClass> {
  const parent = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);
  const classes = new Map<number, CpuClass>();
  for (const node of profile.nodes) {
    let frame: ProfileNode | undefined = node;
    while (frame !== undefined && frame.callFrame.url === '' && !frame.callFrame.functionName.startsWith('(')) frame = parent.get(frame.id);
    classes.set(node.id, frame === undefined ? 'harness' : classOf(frame.callFrame));
  }
  return classes;
}

/** The shares of a profile, weighted by each sample's time. */
export function sharesOf(profile: CpuProfile): CpuShares {
  const classes = classesOf(profile);
  const time = Object.fromEntries(CPU_CLASSES.map((name) => [name, 0])) as Record<CpuClass, number>;
  let total = 0;
  profile.samples.forEach((id, index) => {
    const delta = Math.max(0, profile.timeDeltas[index] ?? 0);
    time[classes.get(id) ?? 'harness'] += delta;
    total += delta;
  });
  const shares = Object.fromEntries(Object.entries(time).map(([name, value]) => [name, total > 0 ? value / total : 0])) as Record<CpuClass, number>;
  return { samples: profile.samples.length, shares };
}

/**
 * The best a figure measured against today's seed time could be (see the header): with a harness and
 * GC that cost nothing (÷ (sql + core)), keeping S6 and S7 at today's cost (÷ (sql + core + checkers +
 * history)), and with the core's own JavaScript free as well (÷ sql).
 */
export function ceilingsOf(value: number, cpu: CpuShares): { freeHarness: number; keepingS6S7: number; freeCore: number } {
  const { sql, core, checkers, history } = cpu.shares;
  return { freeHarness: value / (sql + core), keepingS6S7: value / (sql + core + checkers + history), freeCore: value / sql };
}

/** The header of sharesText's figures. */
export const SHARES_HEADER = 'SQL (statement calls, BEGIN/COMMIT) / core (rest of src/) / checkers / history+hash / GC / idle / harness';

/** The shares as percentages in CPU_CLASSES order, `33.8% / 16.6% / ...`, for a bench's context table. */
export function sharesText(cpu: CpuShares): string {
  return CPU_CLASSES.map((name) => `${(100 * cpu.shares[name]).toFixed(1)}%`).join(' / ');
}

/** Runs `work` under the sampling profiler (every 100 µs) and returns where its time went. */
export async function profileShares(work: () => Promise<void>): Promise<CpuShares> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    const outcome = await work().then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    const { profile } = (await session.post('Profiler.stop')) as { profile: CpuProfile };
    if (outcome !== undefined) throw outcome.error;
    return sharesOf(profile);
  } finally {
    session.disconnect();
  }
}
