/**
 * Section `durability`: what each durability (src/store/durability.ts) costs, on real WAL files in the
 * section's temp dir, against `process_crash` (synchronous NORMAL throughout) measured in the same run,
 * interleaved round by round. Three workloads, each under the three durabilities:
 *
 *   cycle    claim → complete (one tenant, priority 0), the cycle-throughput section's workload;
 *            syncs per cycle: process_crash 0, acknowledged 1 (complete), every_commit 2
 *   run      claim → heartbeat → checkpoint A → recordEffect → checkpoint B → complete, one step of an
 *            agent run with one write tool; syncs: 0, 2 (recordEffect, complete), 6
 *   enqueue  one enqueue per operation; syncs: 0, 1, 1 (under acknowledged the WAL is synced right after
 *            the commit, at every_commit in it: durability.ts SYNCED_AFTER_COMMIT)
 *
 * Figures are medians of per-round ratios (operations/s of a durability ÷ operations/s of NORMAL, or ÷
 * every_commit), with the per-round spread. The backlog a slice consumes is enqueued untimed through a
 * second connection at NORMAL, so a synced durability pays only for what it times.
 *
 * Targets say what the design must give, not what this machine's disk costs: the acknowledged design
 * is never slower than FULL for every commit (cycle, run), it costs FULL's price for an enqueue (it
 * syncs the same commits), and no synced mode beats NORMAL (if one did, the bench would not measure
 * syncs: a filesystem that makes fsync free shows ratios near 1 and says nothing about durability).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { openWorkQueue, SystemClock, type Durability, type WorkQueue } from '../../src/index.ts';
import { SqliteStore } from '../../src/store/sqlite-store.ts';
import { type Contender, pairedRatios, runInterleaved } from './interleave.ts';
import { metric, type BenchContext, type BenchSection, type Metric, type SectionResult } from './registry.ts';
import { fmtRate, median, readSettings, sig, type DbSettings } from './timing.ts';

export type DurabilityWorkload = 'cycle' | 'run' | 'enqueue';

const DURABILITY_LEVELS: readonly Durability[] = ['process_crash', 'acknowledged', 'every_commit'];
const WORKLOADS: readonly DurabilityWorkload[] = ['cycle', 'run', 'enqueue'];
const CONFIG = { capacity: 100_000_000, globalLimit: 2, perTenantLimit: 1 } as const;
const WORKER = 'bench-worker';
const USAGE = { inputTokens: 1_200, outputTokens: 300, modelCalls: 1 };
const RESULT = { outcome: 'resolved', summary: 'ok' };

/** Syncs per operation of each workload under each durability, by design (SYNCED_WRITES): a FULL commit, or an enqueue's sync after its commit. */
export const SYNCS_PER_OPERATION: Record<DurabilityWorkload, Record<Durability, number>> = {
  cycle: { process_crash: 0, acknowledged: 1, every_commit: 2 },
  run: { process_crash: 0, acknowledged: 2, every_commit: 6 },
  enqueue: { process_crash: 0, acknowledged: 1, every_commit: 1 },
};

export const DURABILITY_TARGETS = {
  ackToFullCycle: { op: '>=', value: 1.0 },
  ackToFullRun: { op: '>=', value: 1.0 },
  ackToFullEnqueue: { op: '>=', value: 0.85 },
  toNormal: { op: '<=', value: 1.1 },
} as const;

class DurabilityContender implements Contender {
  readonly name: string;
  private readonly store: SqliteStore;
  private readonly queue: WorkQueue;
  /** A second connection on the same file, at NORMAL, that enqueues the backlog untimed. */
  private readonly feeder: WorkQueue;
  private seq = 0;
  private ok = 0;

  constructor(
    dir: string,
    readonly workload: DurabilityWorkload,
    readonly durability: Durability,
  ) {
    this.name = `${workload}/${durability}`;
    const file = join(dir, `${workload}-${durability}.sqlite`);
    this.store = SqliteStore.open(file, { busyTimeoutMs: 5_000, busyRetries: 3, durability }, () => 0);
    this.queue = openWorkQueue({ db: this.store, clock: new SystemClock(), config: { ...CONFIG } });
    this.feeder = openWorkQueue({ db: file, clock: new SystemClock(), config: { ...CONFIG }, durability: 'process_crash' });
  }

  private request() {
    const s = this.seq++;
    return { tenant: 'acme', topic: `topic-${s}`, version: 1, priority: 0, input: { n: s, text: 'please look at order 1234' } };
  }

  async prepare(n: number): Promise<void> {
    if (this.workload === 'enqueue') return;
    for (let i = 0; i < n; i++) {
      const r = await this.feeder.enqueue(this.request());
      if (!r.ok || r.status !== 'enqueued') throw new Error(`${this.name}: backlog enqueue failed: ${JSON.stringify(r)}`);
    }
  }

  async run(n: number): Promise<void> {
    const q = this.queue;
    for (let i = 0; i < n; i++) {
      if (this.workload === 'enqueue') {
        const r = await q.enqueue(this.request());
        if (!r.ok || r.status !== 'enqueued') throw new Error(`${this.name}: enqueue failed: ${JSON.stringify(r)}`);
        continue;
      }
      const c = await q.claim(WORKER);
      if (!c.ok) throw new Error(`${this.name}: claim failed: ${c.reason}`);
      const { id, generation } = c.task;
      if (this.workload === 'run') {
        must(this.name, 'heartbeat', await q.heartbeat(id, WORKER, generation));
        must(this.name, 'checkpoint A', await q.checkpoint(id, WORKER, generation, { kind: 'A', step: 0, state: { calls: ['refund'] }, usage: USAGE, requeueSafe: true }));
        const e = must(this.name, 'recordEffect', await q.recordEffect(id, WORKER, generation, { requestKey: `${id}:refund:f00d`, action: 'refund', result: { refunded: id } }));
        if (e.repeated) throw new Error(`${this.name}: effect of task ${id} was already recorded`);
        must(this.name, 'checkpoint B', await q.checkpoint(id, WORKER, generation, { kind: 'B', step: 1, state: { results: [e.result] }, usage: USAGE }));
      }
      const r = must(this.name, 'complete', await q.complete(id, WORKER, generation, RESULT));
      if (r.outcome !== 'done') throw new Error(`${this.name}: complete was ${r.outcome}`);
    }
    this.ok += n;
  }

  okCount(): number {
    return this.ok;
  }

  /** After the run: the database holds exactly what was counted. */
  async verify(): Promise<void> {
    const counts = (await this.queue.snapshot()).countsByState;
    const expected = this.workload === 'enqueue' ? counts.ready : counts.done;
    if (expected !== this.ok) throw new Error(`${this.name}: ${expected} tasks ${this.workload === 'enqueue' ? 'ready' : 'done'}, but ${this.ok} operations counted`);
    if (this.workload === 'run' && (await this.queue.effects()).length !== this.ok) throw new Error(`${this.name}: effect ledger does not match ${this.ok} runs`);
  }

  settings(): DbSettings {
    return readSettings(this.store.db);
  }

  async close(): Promise<void> {
    await this.queue.close();
    await this.feeder.close();
  }
}

function must<T extends { ok: boolean }>(name: string, what: string, result: T): T & { ok: true } {
  if (!result.ok) throw new Error(`${name}: ${what} failed: ${JSON.stringify(result)}`);
  return result as T & { ok: true };
}

/** `df -T` of the folder the files live in, for the table (fsync's price depends on it). */
function filesystemOf(dir: string): string {
  try {
    const lines = execFileSync('df', ['-T', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split('\n');
    const [device, type, , , , , mount] = lines.at(-1)!.split(/\s+/);
    return `${type} (${device} on ${mount})`;
  } catch {
    return 'unknown (df failed)';
  }
}

async function run(ctx: BenchContext): Promise<SectionResult> {
  const all: DurabilityContender[] = [];
  for (const workload of WORKLOADS) for (const durability of DURABILITY_LEVELS) all.push(new DurabilityContender(ctx.tmpDir, workload, durability));
  const of = (workload: DurabilityWorkload, durability: Durability) => all.find((c) => c.workload === workload && c.durability === durability)!;
  const settings = Object.fromEntries(all.map((c) => [c.name, c.settings()]));
  const filesystem = filesystemOf(ctx.tmpDir);
  ctx.progress(`  files in ${ctx.tmpDir}: ${filesystem}`);
  try {
    const res = await runInterleaved(ctx, all, {
      rounds: ctx.options.rounds,
      sliceMs: ctx.options.sliceMs,
      warmupMs: ctx.options.quick ? 150 : 400,
      // A synced run cycle is several fsyncs: a slice of 200 of them would take seconds.
      minOps: 10,
    });
    for (const c of all) await c.verify();
    const r = res.ratesPerRound;
    const ratio = (a: DurabilityContender, b: DurabilityContender) => pairedRatios(r[a.name]!, r[b.name]!);
    const metrics: Metric[] = [];
    const ratios: Record<string, number[]> = {};
    const title: Record<DurabilityWorkload, string> = { cycle: 'claim→complete cycles/s', run: 'run steps/s (6 writes)', enqueue: 'enqueues/s' };
    const Cap = (w: string) => w[0]!.toUpperCase() + w.slice(1);
    for (const workload of WORKLOADS) {
      const normal = of(workload, 'process_crash');
      const ack = of(workload, 'acknowledged');
      const full = of(workload, 'every_commit');
      const ackToNormal = ratio(ack, normal);
      const fullToNormal = ratio(full, normal);
      const ackToFull = ratio(ack, full);
      Object.assign(ratios, { [`${workload}AckToNormal`]: ackToNormal, [`${workload}FullToNormal`]: fullToNormal, [`${workload}AckToFull`]: ackToFull });
      metrics.push(
        metric(`durability${Cap(workload)}AckToNormal`, `${title[workload]}: acknowledged ÷ NORMAL (process_crash)`, median(ackToNormal), DURABILITY_TARGETS.toNormal, ackToNormal),
        metric(`durability${Cap(workload)}FullToNormal`, `${title[workload]}: every_commit (FULL) ÷ NORMAL`, median(fullToNormal), DURABILITY_TARGETS.toNormal, fullToNormal),
        metric(
          `durability${Cap(workload)}AckToFull`,
          `${title[workload]}: acknowledged ÷ every_commit (FULL)`,
          median(ackToFull),
          DURABILITY_TARGETS[`ackToFull${Cap(workload)}` as 'ackToFullCycle' | 'ackToFullRun' | 'ackToFullEnqueue'],
          ackToFull,
        ),
      );
    }
    const medRate = (c: DurabilityContender) => median(r[c.name]!);
    return {
      metrics,
      context: [
        { label: 'database files', value: `${ctx.tmpDir}: ${filesystem}` },
        ...all.map((c) => ({
          label: `${c.name} (median; FULL commits per op by design: ${SYNCS_PER_OPERATION[c.workload][c.durability]})`,
          value: fmtRate(medRate(c)),
        })),
      ],
      raw: {
        filesystem,
        tmpDir: ctx.tmpDir,
        syncsPerOperation: SYNCS_PER_OPERATION,
        dbSettings: settings,
        opsPerSlice: res.opsPerSlice,
        warmupRates: Object.fromEntries(Object.entries(res.warmupRates).map(([k, v]) => [k, sig(v)])),
        ratesPerRound: Object.fromEntries(Object.entries(r).map(([k, xs]) => [k, xs.map((v) => sig(v))])),
        order: res.order,
        ratiosPerRound: Object.fromEntries(Object.entries(ratios).map(([k, xs]) => [k, xs.map((v) => sig(v))])),
        medianRates: Object.fromEntries(all.map((c) => [c.name, sig(medRate(c))])),
        checkedOk: Object.fromEntries(all.map((c) => [c.name, c.okCount()])),
      },
    };
  } finally {
    for (const c of all) await c.close();
  }
}

export const durabilitySection: BenchSection = {
  id: 'durability',
  title: 'Durability: claim→complete, a run step and enqueue under NORMAL, acknowledged and FULL (WAL files)',
  run,
};
