/**
 * The peer contender: plainjob 0.0.14 on better-sqlite3, same WAL/NORMAL file settings. Its worker
 * (node_modules/plainjob/src/worker.ts, processRegularJobs) does, per job and synchronously apart from
 * the user's processor: getAndMarkJobAsProcessing(type) (one BEGIN IMMEDIATE transaction: select the
 * oldest pending id, mark it processing), getJobById(id) (to hand the job's data to the processor), and
 * markJobAsDone(id) (one autocommit UPDATE). Its own benchmark preloads with addMany and then runs that
 * worker. We call those same three queue methods directly, without the worker's async loop, logging and
 * cron check, which is the lowest-overhead way to use it that still delivers the job's data, like our
 * claim does. The `bare` variant drops getJobById (claim id + mark done only), for context.
 */
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { better, defineQueue, type Logger, type Queue } from 'plainjob';
import type { Contender } from './interleave.ts';
import { openWalDatabase, readSettings, type DbSettings } from './timing.ts';

const TYPE = 'bench';
const silent: Logger = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {} };

export class PlainjobCycleContender implements Contender {
  readonly name: string;
  private readonly db: Database.Database;
  private readonly queue: Queue;
  private seq = 0;
  private ok = 0;

  constructor(dir: string, private readonly backlog: number, private readonly bare = false) {
    this.name = bare ? 'plainjob-bare' : 'plainjob';
    this.db = openWalDatabase(join(dir, `${this.name}.sqlite`));
    // defineQueue sets journal_mode=WAL, synchronous=1 (NORMAL), busy_timeout=5000 itself, and starts a
    // maintenance interval (cleared by close()).
    this.queue = defineQueue({ connection: better(this.db), logger: silent });
    this.add(backlog);
  }

  private add(n: number): void {
    const jobs: unknown[] = [];
    for (let i = 0; i < n; i++) jobs.push({ n: this.seq++, text: 'please look at order 1234' });
    const { ids } = this.queue.addMany(TYPE, jobs);
    if (ids.length !== n) throw new Error(`plainjob addMany added ${ids.length} of ${n}`);
  }

  prepare(n: number): void {
    this.add(n);
  }

  run(n: number): void {
    const q = this.queue;
    const bare = this.bare;
    for (let i = 0; i < n; i++) {
      const claimed = q.getAndMarkJobAsProcessing(TYPE);
      if (!claimed) throw new Error('plainjob: no pending job to claim');
      if (!bare) {
        const job = q.getJobById(claimed.id);
        if (!job || job.status !== 1 /* Processing */) throw new Error(`plainjob: job ${claimed.id} not processing`);
      }
      // Typed as void, but it returns better-sqlite3's RunResult.
      const done = q.markJobAsDone(claimed.id) as unknown as { changes: number };
      if (done.changes !== 1) throw new Error(`plainjob: markJobAsDone(${claimed.id}) changed ${done.changes} rows`);
    }
    this.ok += n;
  }

  okCount(): number {
    return this.ok;
  }

  verify(): void {
    const done = this.queue.countJobs({ type: TYPE, status: 2 /* Done */ });
    const pending = this.queue.countJobs({ type: TYPE, status: 0 /* Pending */ });
    if (done !== this.ok) throw new Error(`plainjob: ${done} jobs done, but ${this.ok} cycles counted`);
    if (pending !== this.backlog) throw new Error(`plainjob: ${pending} pending at the end, expected ${this.backlog}`);
  }

  settings(): DbSettings {
    return readSettings(this.db);
  }

  close(): void {
    this.queue.close(); // clears its interval and closes the database
  }
}
