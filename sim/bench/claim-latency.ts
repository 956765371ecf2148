/**
 * Section `claim-latency`: does claim stay cheap when the backlog is huge but mostly ineligible?
 *
 * Two queues of the same shape, each on its own WAL file database (synchronous=NORMAL):
 *   - tenant `big` holds 99% of the ready tasks and is at its quota (perTenantLimit 1, one of its tasks
 *     is running under worker `holder` with a long lease), so none of its ready tasks is eligible;
 *   - the other 1% belong to 10 small tenants, spread evenly through the enqueue order;
 *   - base priorities 0..30 (seeded), enqueue times spread evenly over 45 minutes of a manual clock, so
 *     aging (one point per minute, cap 30) changes the order.
 * Sizes: 100,000 ready tasks vs 1,000 ready tasks. Each claim is timed alone with hrtime; after it the
 * claimed task is completed and a fresh task for the same small tenant is enqueued (both untimed), so
 * the backlog keeps its shape (the replacement keeps the claimed task's tenant and base priority; it
 * is enqueued at the current clock time). Rounds alternate which queue goes first.
 *
 *   claimLatency100kTo1kRatio = median_r( median claim latency 100k [r] / median claim latency 1k [r] )
 *   target <= 1.5
 */
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { openWorkQueue, type WorkQueue } from '../../src/index.ts';
import type { Clock } from '../../src/ports.ts';
import { metric, type BenchContext, type BenchSection, type SectionResult } from './registry.ts';
import { elapsedNs, fmtRate, fmtUs, median, nowNs, openWalDatabase, prng, quantile, readSettings, sig } from './timing.ts';

export const LATENCY_TARGET = { op: '<=', value: 1.5 } as const;

/** A clock that moves only when told to (wall time does not matter here, ordering by age does). */
export class ManualClock implements Clock {
  constructor(private t: number) {}
  now(): number {
    return this.t;
  }
  set(t: number): void {
    this.t = t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

const EPOCH = 1_700_000_000_000;
const SPAN_MS = 45 * 60_000;
const STEP_MS = 100; // manual clock step per measured claim
const BIG = 'big';
const SMALL = Array.from({ length: 10 }, (_, i) => `small-${i}`);
const WORKER = 'latency-worker';
const RESULT = { outcome: 'resolved' };

export const LATENCY_CONFIG = {
  capacity: 100_000_000,
  globalLimit: 1000,
  perTenantLimit: 1,
  leaseMs: 24 * 3600_000,
  heartbeatMs: 3600_000,
} as const;

interface Shape {
  label: string;
  ready: number;
  queue: WorkQueue;
  db: Database.Database;
  clock: ManualClock;
  rng: () => number;
  seq: number;
  fillSeconds: number;
  samplesNs: number[];
  roundMediansNs: number[];
}

function enqueueOne(s: Shape, tenant: string, priority = Math.floor(s.rng() * 31)): void {
  const n = s.seq++;
  const r = s.queue.enqueue({
    tenant,
    topic: `${tenant}-topic-${n}`,
    version: 1,
    priority,
    input: { n, text: 'customer asks about order 1234' },
  });
  if (!r.ok || r.status !== 'enqueued') throw new Error(`${s.label}: enqueue failed: ${JSON.stringify(r)}`);
}

function build(ctx: BenchContext, label: string, ready: number, seed: number): Shape {
  const db = openWalDatabase(join(ctx.tmpDir, `latency-${label}.sqlite`));
  const clock = new ManualClock(EPOCH);
  const queue = openWorkQueue({ db, clock, config: { ...LATENCY_CONFIG } });
  const s: Shape = { label, ready, queue, db, clock, rng: prng(seed), seq: 0, fillSeconds: 0, samplesNs: [], roundMediansNs: [] };

  // The big tenant's one running task, held by another worker: big is at its quota from here on.
  enqueueOne(s, BIG);
  const held = queue.claim('holder');
  if (!held.ok || held.task.tenant !== BIG) throw new Error(`${label}: could not put ${BIG} at quota: ${JSON.stringify(held)}`);

  const start = nowNs();
  const every = Math.max(1, Math.floor(ready / 10));
  for (let i = 0; i < ready; i++) {
    clock.set(EPOCH + 1 + Math.floor((i * SPAN_MS) / ready));
    enqueueOne(s, i % 100 === 50 ? SMALL[Math.floor(i / 100) % SMALL.length]! : BIG);
    if ((i + 1) % every === 0 && ready >= 10_000) {
      const secs = elapsedNs(start) / 1e9;
      ctx.progress(`  fill ${label}: ${i + 1}/${ready} (${fmtRate((i + 1) / secs)})`);
    }
  }
  s.fillSeconds = elapsedNs(start) / 1e9;
  clock.set(EPOCH + SPAN_MS + 1);
  return s;
}

/** One timed claim, then (untimed) complete it and enqueue a replacement for the same tenant. */
function measureClaims(s: Shape, n: number, record: boolean): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    s.clock.advance(STEP_MS);
    const t0 = nowNs();
    const c = s.queue.claim(WORKER);
    const ns = elapsedNs(t0);
    if (!c.ok) throw new Error(`${s.label}: claim failed: ${c.reason}`);
    if (c.task.tenant === BIG) throw new Error(`${s.label}: claim returned a task of ${BIG}, which is at its quota`);
    const done = s.queue.complete(c.task.id, WORKER, c.task.generation, RESULT);
    if (!done.ok || done.outcome !== 'done') throw new Error(`${s.label}: complete failed: ${JSON.stringify(done)}`);
    // Same tenant and same base priority: the set of (tenant, priority) levels, which is what a claim
    // walks, stays as it was filled (a random priority here would drain the high levels over the run).
    enqueueOne(s, c.task.tenant, c.task.priority);
    if (record) out.push(ns);
  }
  return out;
}

/**
 * Diagnostic only: distinct (tenant, base priority) pairs among ready tasks of tenants other than `big`.
 * It reads the queue's table directly, so it returns undefined if the schema is not what it expects.
 */
function eligibleLevels(db: Database.Database): number | undefined {
  try {
    const row = db
      .prepare(`SELECT count(*) AS n FROM (SELECT DISTINCT tenant, priority FROM tasks WHERE state = 'ready' AND tenant <> ?)`)
      .get(BIG) as { n: number };
    return row.n;
  } catch {
    return undefined;
  }
}

function run(ctx: BenchContext): SectionResult {
  const quick = ctx.options.quick;
  const bigSize = quick ? 20_000 : 100_000;
  const smallSize = 1_000;
  const perRound = quick ? 60 : 200;
  const rounds = ctx.options.rounds;

  ctx.progress(`  filling ${smallSize} ready tasks`);
  const small = build(ctx, '1k', smallSize, 1);
  ctx.progress(`  filling ${bigSize} ready tasks (progress every 10%)`);
  const big = build(ctx, bigSize === 100_000 ? '100k' : `${bigSize / 1000}k`, bigSize, 2);
  try {
    // Shape check: the backlog is what the section says it is.
    for (const s of [small, big]) {
      const snap = s.queue.snapshot();
      if ((snap.countsByState.ready ?? 0) !== s.ready || (snap.countsByState.running ?? 0) !== 1) {
        throw new Error(`${s.label}: expected ${s.ready} ready + 1 running, got ${JSON.stringify(snap.countsByState)}`);
      }
    }

    // Warm-up, then alternating rounds.
    for (const s of [small, big]) measureClaims(s, quick ? 30 : 100, false);
    const ratios: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [small, big] : [big, small];
      for (const s of order) {
        ctx.gc();
        const xs = measureClaims(s, perRound, true);
        s.samplesNs.push(...xs);
        s.roundMediansNs.push(median(xs));
      }
      ratios.push(big.roundMediansNs[r]! / small.roundMediansNs[r]!);
      ctx.progress(
        `  round ${r + 1}/${rounds}: median claim ${big.label} ${fmtUs(big.roundMediansNs[r]!)}, ` +
          `${small.label} ${fmtUs(small.roundMediansNs[r]!)}, ratio ${ratios[r]!.toFixed(2)}`,
      );
    }

    const value = median(ratios);
    const levels = { [small.label]: eligibleLevels(small.db), [big.label]: eligibleLevels(big.db) };
    const stat = (s: Shape) => ({
      ready: s.ready,
      fillSeconds: sig(s.fillSeconds),
      fillRatePerSecond: sig((s.ready + 1) / s.fillSeconds),
      claimsMeasured: s.samplesNs.length,
      medianNs: sig(median(s.samplesNs)),
      p10Ns: sig(quantile(s.samplesNs, 0.1)),
      p90Ns: sig(quantile(s.samplesNs, 0.9)),
      p99Ns: sig(quantile(s.samplesNs, 0.99)),
      roundMediansNs: s.roundMediansNs.map((v) => sig(v)),
      dbSettings: readSettings(s.db),
    });
    return {
      metrics: [
        metric(
          'claimLatency100kTo1kRatio',
          `median claim latency, ${big.label} ready (99% ineligible) ÷ 1k ready`,
          value,
          LATENCY_TARGET,
          ratios,
        ),
      ],
      context: [
        { label: `median claim latency ${big.label} (all samples)`, value: fmtUs(median(big.samplesNs)) },
        { label: `median claim latency ${small.label} (all samples)`, value: fmtUs(median(small.samplesNs)) },
        { label: `p90 claim latency ${big.label} / ${small.label}`, value: `${fmtUs(quantile(big.samplesNs, 0.9))} / ${fmtUs(quantile(small.samplesNs, 0.9))}` },
        {
          label: 'eligible (tenant, base priority) levels at the end',
          value: `${big.label} ${levels[big.label] ?? 'n/a'}, ${small.label} ${levels[small.label] ?? 'n/a'}`,
        },
        { label: `enqueue fill rate ${big.label} (${bigSize} tasks)`, value: `${fmtRate((bigSize + 1) / big.fillSeconds)} in ${big.fillSeconds.toFixed(1)} s` },
        { label: `enqueue fill rate ${small.label}`, value: fmtRate((smallSize + 1) / small.fillSeconds) },
        ...(quick ? [{ label: 'NOTE', value: `quick mode: the large queue has ${bigSize} tasks, not 100k` }] : []),
      ],
      raw: {
        config: LATENCY_CONFIG,
        shape: { bigTenantShare: 0.99, smallTenants: SMALL.length, priorities: '0..30 seeded', enqueueSpanMs: SPAN_MS, clockStepPerClaimMs: STEP_MS },
        claimsPerRound: perRound,
        ratiosPerRound: ratios.map((v) => sig(v)),
        eligibleLevelsAtEnd: levels,
        large: stat(big),
        small: stat(small),
      },
    };
  } finally {
    for (const s of [small, big]) {
      s.queue.close();
      if (s.db.open) s.db.close();
    }
  }
}

export const claimLatencySection: BenchSection = {
  id: 'claim-latency',
  title: 'Claim latency with a large, mostly ineligible backlog',
  run,
};
