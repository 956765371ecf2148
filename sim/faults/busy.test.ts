import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BusyError } from '../../src/queue/errors.ts';
import { SqliteStore } from '../../src/store/sqlite-store.ts';
import { openWorkQueue } from '../../src/work-queue.ts';
import { EventLoop } from '../event-loop.ts';
import { History } from '../history.ts';
import { SeededRandom } from '../random.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { World } from '../world.ts';
import { BusyWindows } from './busy.ts';
import { databaseNeeds } from '../world/database-host.ts';
import { NO_RATES, type FaultPlan } from './plan.ts';

const folders: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

const request = { tenant: 'acme', topic: 'order-1', version: 1, priority: 3, input: { text: 'hello' } };

/** A queue on a file, as the world opens it for a busy seed (busy timeout 0), and a competing writer on the same file. */
function setUp(busyRetries: number) {
  const folder = mkdtempSync(join(tmpdir(), 'leasehold-busy-test-'));
  folders.push(folder);
  const file = join(folder, 'queue.sqlite');
  const loop = new EventLoop();
  const store = SqliteStore.open(file, { busyTimeoutMs: 0, busyRetries }, () => loop.clock.now());
  const queue = openWorkQueue({ clock: loop.clock, random: new SeededRandom('core'), db: store });
  const windows = new BusyWindows(loop, new History(loop), new SeededRandom('faults'), file);
  return { loop, queue, windows };
}

describe('the busy fault is a competing writer beneath the store (S4, Q18)', () => {
  it('needs a database file only for a plan with a busy fault', () => {
    const plan: FaultPlan = { timed: [], points: [], rates: { ...NO_RATES } };
    expect(databaseNeeds(plan).has('file')).toBe(false);
    expect(databaseNeeds({ ...plan, timed: [{ kind: 'busy', atMs: 0, durationMs: 1_000, probability: 0.3 }] }).has('file')).toBe(true);
  });

  it.each([0, 3])('a write while the lock is held meets a BusyError from src/store after its %i retries, and nothing is written', async (busyRetries) => {
    const { loop, queue, windows } = setUp(busyRetries);
    // probability 1: the competing writer holds the lock for the whole window, burst after burst.
    windows.open({ kind: 'busy', atMs: 0, durationMs: 5_000, probability: 1 });
    expect(windows.holding).toBe(true);
    const before = await queue.snapshot();
    const error = await queue.enqueue(request).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    // src's own retry loop ran: one attempt plus busyRetries, each met SQLITE_BUSY at once (busy timeout 0,
    // and the holder lets go only at a loop event), so the attempts are counted by src, not by the simulator.
    expect(error).toBeInstanceOf(BusyError);
    expect((error as BusyError).code).toBe('db_busy');
    expect((error as BusyError).attempts).toBe(busyRetries + 1);
    expect((error as Error).stack).toMatch(/sqlite-store\.ts/);
    expect(await queue.snapshot()).toEqual(before);
    expect(await queue.allEvents()).toEqual([]);
    // Past the window the lock is let go at a loop event, and the same call goes through.
    await loop.run();
    expect(windows.holding).toBe(false);
    expect(await queue.enqueue(request)).toMatchObject({ ok: true });
    windows.close();
    await queue.close();
  });

  it('holds the lock about `probability` of the window, in bursts drawn from the faults stream, the same every time', async () => {
    const held = async (): Promise<number[]> => {
      const { loop, queue, windows } = setUp(0);
      windows.open({ kind: 'busy', atMs: 0, durationMs: 20_000, probability: 0.3 });
      const samples: number[] = [];
      for (let at = 0; at < 20_000; at += 10) loop.schedule(loop.now() + at, () => void samples.push(windows.holding ? 1 : 0));
      await loop.run();
      expect(windows.holding).toBe(false);
      windows.close();
      await queue.close();
      return samples;
    };
    const first = await held();
    expect(await held()).toEqual(first);
    const share = first.reduce((sum, bit) => sum + bit, 0) / first.length;
    expect(share).toBeGreaterThan(0.15);
    expect(share).toBeLessThan(0.45);
  });

  it('in a world run every db_busy a worker, client or supervisor recorded is a BusyError src/store threw, and the run passes', async () => {
    const thrown: BusyError[] = [];
    const real = SqliteStore.prototype.writeNow;
    vi.spyOn(SqliteStore.prototype, 'writeNow').mockImplementation(function (this: SqliteStore, ...args: Parameters<SqliteStore['writeNow']>) {
      try {
        return real.apply(this, args);
      } catch (error) {
        if (error instanceof BusyError) thrown.push(error);
        throw error;
      }
    });
    const scenario: ScenarioSpec = catalogueScenario('concurrent-claimers');
    const run = await new World(scenario, '1').run();
    expect(run.crash).toBeUndefined();
    const busy = run.history.entries().filter((entry) => entry.type === 'fail' && entry.reason === 'db_busy');
    expect(busy.length).toBeGreaterThan(0);
    // No restart in this scenario, so no call met a scheduler that was down: every db_busy came from src.
    expect(run.plan.timed.some((fault) => fault.kind === 'restart')).toBe(false);
    expect(thrown.length).toBe(busy.length);
    expect(thrown.every((error) => error.attempts === 3 + 1)).toBe(true);
    expect(run.final.tasks.every((task) => task.state === 'done')).toBe(true);
  });
});
