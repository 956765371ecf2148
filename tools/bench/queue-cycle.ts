/**
 * Our contender: the Leasehold queue's claim → complete cycle on a WAL file database. Tasks are
 * enqueued untimed before each slice (so a backlog of `backlog` ready tasks is always there), then the
 * slice times claim(worker) followed by complete(id, worker, generation, result), and checks both.
 *
 * Two workload shapes:
 *   - `mixed` (the reported figure): 4 tenants round robin, base priorities 0..30;
 *   - `flat` (context): one tenant, every task priority 0, i.e. the same workload plainjob runs (it has
 *     neither tenants nor priorities). The gap between the two shows what the claim's walk over
 *     (tenant, priority) levels costs.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type Database from 'better-sqlite3';
import { openWorkQueue, SystemClock, type Needs, type QueueConfig, type WorkQueue } from '../../src/index.ts';
import type { Contender } from './interleave.ts';
import type { BenchContext } from './registry.ts';
import { openWalDatabase, readSettings, type DbSettings } from './timing.ts';

const WORKER = 'bench-worker';
const MIXED_TENANTS = ['acme', 'globex', 'initech', 'umbrella'];

export type CycleShape = 'mixed' | 'flat';
const RESULT = { outcome: 'resolved', summary: 'ok' };

export const CYCLE_CONFIG = {
  capacity: 100_000_000,
  globalLimit: 2,
  perTenantLimit: 1,
} as const;

/**
 * A variant of the contender: another build of the queue (a baseline checkout's openWorkQueue, measured
 * side by side with this one), a configuration, and what each task needs of its budgets.
 */
export interface CycleVariant {
  name: string;
  open?: (options: { db: Database.Database; clock: SystemClock; config: Partial<QueueConfig> }) => WorkQueue;
  config?: Partial<QueueConfig>;
  needs?: Needs;
}

/**
 * Another build's queue as a variant named `name`, when LEASEHOLD_BENCH_BASELINE names a checkout of it
 * with its node_modules (`git worktree add /tmp/base 7abb19d && ln -s "$PWD/node_modules" /tmp/base/`):
 * measured in the same rounds as this build, so a change's cost is a paired ratio, not two runs' figures.
 */
export async function baselineVariant(ctx: BenchContext, name: string): Promise<CycleVariant | undefined> {
  const dir = process.env.LEASEHOLD_BENCH_BASELINE;
  if (dir === undefined || dir === '') return undefined;
  const entry = join(resolve(dir), 'src', 'index.ts');
  if (!existsSync(entry)) throw new Error(`LEASEHOLD_BENCH_BASELINE=${dir}: no src/index.ts there`);
  const module = (await import(pathToFileURL(entry).href)) as { openWorkQueue: NonNullable<CycleVariant['open']> };
  ctx.progress(`  baseline: ${entry}`);
  return { name, open: module.openWorkQueue };
}

export class QueueCycleContender implements Contender {
  readonly name: string;
  private readonly db: Database.Database;
  private readonly queue: WorkQueue;
  private seq = 0;
  private ok = 0;
  private staleInput = 0;

  constructor(
    dir: string,
    private readonly backlog: number,
    private readonly shape: CycleShape = 'mixed',
    private readonly variant?: CycleVariant,
  ) {
    this.name = variant?.name ?? (shape === 'mixed' ? 'leasehold' : 'leasehold-flat');
    this.db = openWalDatabase(join(dir, `${this.name}.sqlite`));
    const open = variant?.open ?? openWorkQueue;
    this.queue = open({ db: this.db, clock: new SystemClock(), config: { ...CYCLE_CONFIG, ...variant?.config } });
  }

  /** Enqueues the standing backlog; call once before the first slice. */
  async init(): Promise<this> {
    await this.enqueue(this.backlog);
    return this;
  }

  private async enqueue(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const s = this.seq++;
      const r = await this.queue.enqueue({
              tenant: this.shape === 'mixed' ? MIXED_TENANTS[s % MIXED_TENANTS.length]! : 'acme',
              topic: `topic-${s}`,
              version: 1,
              priority: this.shape === 'mixed' ? s % 31 : 0,
              input: { n: s, text: 'please look at order 1234' },
              ...(this.variant?.needs === undefined ? {} : { needs: this.variant.needs }),
            });
      if (!r.ok || r.status !== 'enqueued') throw new Error(`leasehold enqueue failed: ${JSON.stringify(r)}`);
    }
  }

  async prepare(n: number): Promise<void> {
    await this.enqueue(n);
  }

  async run(n: number): Promise<void> {
    const q = this.queue;
    for (let i = 0; i < n; i++) {
      const c = await q.claim(WORKER);
      if (!c.ok) throw new Error(`leasehold claim failed: ${c.reason}`);
      const r = await q.complete(c.task.id, WORKER, c.task.generation, RESULT);
      if (!r.ok) throw new Error(`leasehold complete failed: ${r.error}`);
      if (r.outcome !== 'done') this.staleInput++;
    }
    this.ok += n;
  }

  okCount(): number {
    return this.ok;
  }

  /** After the run: every claimed task is done, and the backlog is what was left. */
  async verify(): Promise<void> {
    const snap = await this.queue.snapshot();
    const done = snap.countsByState.done ?? 0;
    const ready = snap.countsByState.ready ?? 0;
    if (done !== this.ok) throw new Error(`leasehold: ${done} tasks done, but ${this.ok} cycles counted`);
    if (ready !== this.backlog) throw new Error(`leasehold: ${ready} ready at the end, expected ${this.backlog}`);
    if (this.staleInput !== 0) throw new Error(`leasehold: ${this.staleInput} completions were stale_input`);
  }

  settings(): DbSettings {
    return readSettings(this.db);
  }

  async close(): Promise<void> {
    await this.queue.close();
    if (this.db.open) this.db.close();
  }
}
