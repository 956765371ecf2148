/**
 * Section `pg-claim-latency`: claim-latency.ts's question on the PostgreSQL store (the local server,
 * a fresh schema per queue, dropped at the end): does claim stay cheap when the backlog is huge but
 * mostly ineligible?
 *
 * The same shapes, config (LATENCY_CONFIG), tenants, seeded priorities, 45-minute enqueue spread on a
 * manual clock and measuring loop as claim-latency.ts:
 *   - `100k`: 100,000 ready, 99% of them `big`'s, which is at its quota (one task running under
 *     `holder`), so one task in every 100 is eligible (the same 1,000 eligible tasks as `1k`);
 *   - `1k`: 1,000 ready, all eligible;
 *   - `1k-99%` (context): 1,000 ready with the 100k mix (10 eligible).
 * Each claim is timed alone (hrtime around `claim`, one process, one connection in use); then, untimed,
 * the task is completed and a replacement for the same tenant and base priority is enqueued. Rounds
 * rotate which queue goes first.
 *
 * Filling goes through the queue's own enqueue, as claim-latency.ts does (no row is written behind the
 * queue's back). On PostgreSQL an enqueue is one transaction of several round trips under the queue's
 * advisory lock, so a 100k fill takes minutes; to hide the client-side gaps it runs FILL_LANES enqueue
 * loops at once, each on its own WorkQueue instance (own pool) on the same schema, all reading one
 * VirtualClock. Every 10% of a fill, and after it, the bench ANALYZEs the queue's tables (also at 500 and 2,000 tasks; what autovacuum
 * would do; the local test server runs with autovacuum off, and with the statistics of an empty table
 * enqueue's taskOlderUnstarted lookup is planned on tasks_ready and scans the tenant's whole ready
 * backlog: 20 ms an enqueue at 20k tasks). The clock is read inside the transaction after the advisory lock is taken, i.e. in
 * commit order, so enqueue times still only move forward; task i gets its tenant, priority draw and
 * clock position from its index, as in claim-latency.ts.
 *
 *   pgClaimLatency100kTo1kRatio = median_r( median claim latency 100k [r] / median claim latency 1k [r] )
 *   target <= 1.5
 */
import pg from 'pg';
import { openWorkQueue, type WorkQueue } from '../../src/index.ts';
import { VirtualClock } from '../../sim/clock.ts';
import { LATENCY_CONFIG, LATENCY_TARGET, latencyRounds, latencyStat } from './claim-latency.ts';
import { analyzeSchemas, autovacuumSetting, dropSchemas, PG_URL, pgUnreachable, runTag } from './pg-servers.ts';
import { metric, type BenchContext, type BenchSection, type SectionResult } from './registry.ts';
import { elapsedNs, fmtRate, fmtUs, median, nowNs, prng, quantile, sig } from './timing.ts';

const EPOCH = 1_700_000_000_000;
const SPAN_MS = 45 * 60_000;
const STEP_MS = 100;
const BIG = 'big';
const SMALL = Array.from({ length: 10 }, (_, i) => `small-${i}`);
const WORKER = 'latency-worker';
const RESULT = { outcome: 'resolved' };
const FILL_LANES = 4;

interface Shape {
  label: string;
  schema: string;
  ready: number;
  smallEvery: number;
  queue: WorkQueue;
  /** Extra instances on the same schema for the fill only (closed after it). */
  lanes: WorkQueue[];
  clock: VirtualClock;
  smallRng: () => number;
  bigRng: () => number;
  seq: number;
  fillSeconds: number;
  samplesNs: number[];
  roundMediansNs: number[];
}

async function enqueueOne(s: Shape, q: WorkQueue, tenant: string, priority = Math.floor((tenant === BIG ? s.bigRng : s.smallRng)() * 31)): Promise<void> {
  const n = s.seq++;
  const r = await q.enqueue({ tenant, topic: `${tenant}-topic-${n}`, version: 1, priority, input: { n, text: 'customer asks about order 1234' } });
  if (!r.ok || r.status !== 'enqueued') throw new Error(`${s.label}: enqueue failed: ${JSON.stringify(r)}`);
}

function open(schema: string, clock: VirtualClock): WorkQueue {
  return openWorkQueue({ db: PG_URL, schema, clock, config: { ...LATENCY_CONFIG } });
}

async function build(ctx: BenchContext, created: string[], label: string, ready: number, smallEvery: number): Promise<Shape> {
  const schema = runTag(`lh_bench_lat_${label.replace('%', 'pc').replace('-', '_')}`);
  created.push(schema);
  const clock = new VirtualClock(EPOCH);
  const queue = open(schema, clock);
  const s: Shape = {
    label, schema, ready, smallEvery, queue, lanes: [], clock,
    smallRng: prng(1), bigRng: prng(2), seq: 0, fillSeconds: 0, samplesNs: [], roundMediansNs: [],
  };
  await enqueueOne(s, queue, BIG);
  const held = await queue.claim('holder');
  if (!held.ok || held.task.tenant !== BIG) throw new Error(`${label}: could not put ${BIG} at quota: ${JSON.stringify(held)}`);

  const lanes = [queue, ...Array.from({ length: FILL_LANES - 1 }, () => open(schema, clock))];
  s.lanes = lanes.slice(1);
  const start = nowNs();
  const every = Math.max(1, Math.floor(ready / 10));
  let next = 0;
  let done = 0;
  const lane = async (q: WorkQueue) => {
    while (next < ready) {
      const i = next++;
      // Synchronous up to the enqueue call: index, clock position and priority draw are taken together.
      clock.advanceTo(Math.max(clock.now(), EPOCH + 1 + Math.floor((i * SPAN_MS) / ready)));
      const small = i % smallEvery === Math.floor(smallEvery / 2);
      await enqueueOne(s, q, small ? SMALL[Math.floor(i / smallEvery) % SMALL.length]! : BIG);
      const d = ++done;
      // Planner statistics as autovacuum would keep them (the local server may run with it off): without
      // them enqueue's taskOlderUnstarted plans on tasks_ready and scans the tenant's whole backlog.
      // Early and then every 10%, so no stretch of the fill runs on the statistics of a much smaller table.
      if (d % every === 0 || d === 500 || d === 2000) await analyzeSchemas(PG_URL, [schema]);
      if (d % every === 0 && ready >= 10_000) ctx.progress(`  fill ${label}: ${d}/${ready} (${fmtRate(d / (elapsedNs(start) / 1e9))})`);
    }
  };
  await Promise.all(lanes.map(lane));
  s.fillSeconds = elapsedNs(start) / 1e9;
  await analyzeSchemas(PG_URL, [schema]);
  for (const q of s.lanes) await q.close();
  s.lanes = [];
  clock.advanceTo(Math.max(clock.now(), EPOCH + SPAN_MS + 1));
  return s;
}

async function measureClaims(s: Shape, n: number, record: boolean): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    s.clock.advanceBy(STEP_MS);
    const t0 = nowNs();
    const c = await s.queue.claim(WORKER);
    const ns = elapsedNs(t0);
    if (!c.ok) throw new Error(`${s.label}: claim failed: ${c.reason}`);
    if (c.task.tenant === BIG) throw new Error(`${s.label}: claim returned a task of ${BIG}, which is at its quota`);
    const done = await s.queue.complete(c.task.id, WORKER, c.task.generation, RESULT);
    if (!done.ok || done.outcome !== 'done') throw new Error(`${s.label}: complete failed: ${JSON.stringify(done)}`);
    await enqueueOne(s, s.queue, c.task.tenant, c.task.priority);
    if (record) out.push(ns);
  }
  return out;
}

/** Diagnostic only, read-only: ready tasks of tenants other than `big`, and their distinct (tenant, priority) levels. */
async function eligible(s: Shape): Promise<{ tasks: number; levels: number } | undefined> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const t = (await client.query(`select count(*)::int as n from "${s.schema}".tasks where state = 'ready' and tenant <> $1`, [BIG])).rows[0].n as number;
    const l = (await client.query(`select count(*)::int as n from (select distinct tenant, priority from "${s.schema}".tasks where state = 'ready' and tenant <> $1) x`, [BIG])).rows[0].n as number;
    return { tasks: t, levels: l };
  } catch {
    return undefined;
  } finally {
    await client.end();
  }
}

async function run(ctx: BenchContext): Promise<SectionResult> {
  const down = await pgUnreachable();
  if (down !== undefined) {
    ctx.progress(`  SKIPPED: ${down}`);
    return { metrics: [], context: [{ label: 'SKIPPED', value: down }], raw: { skipped: down } };
  }
  const quick = ctx.options.quick;
  const bigSize = quick ? 2_000 : 100_000;
  const smallSize = 1_000;
  const perRound = quick ? 20 : 200;
  const rounds = quick ? Math.min(ctx.options.rounds, 3) : ctx.options.rounds;
  const bigLabel = bigSize === 100_000 ? '100k' : `${bigSize / 1000}k`;

  const shapes: Shape[] = [];
  const created: string[] = [];
  const autovacuum = await autovacuumSetting(PG_URL);
  try {
    ctx.progress(`  filling ${smallSize} ready tasks, all eligible`);
    const small = await build(ctx, created, '1k', smallSize, 1);
    shapes.push(small);
    ctx.progress(`  filling ${smallSize} ready tasks, 99% ineligible (context)`);
    const mixedSmall = await build(ctx, created, '1k-99%', smallSize, 100);
    shapes.push(mixedSmall);
    const every = bigSize / smallSize;
    ctx.progress(`  filling ${bigSize} ready tasks, one in ${every} eligible (${FILL_LANES} enqueue lanes)`);
    const big = await build(ctx, created, bigLabel, bigSize, every);
    shapes.push(big);

    for (const s of shapes) {
      const snap = await s.queue.snapshot();
      if ((snap.countsByState.ready ?? 0) !== s.ready || (snap.countsByState.running ?? 0) !== 1) {
        throw new Error(`${s.label}: expected ${s.ready} ready + 1 running, got ${JSON.stringify(snap.countsByState)}`);
      }
    }
    const atStart = await Promise.all(shapes.map(eligible));
    if (atStart[0]?.tasks !== smallSize || atStart[2]?.tasks !== smallSize) {
      throw new Error(`the 1k and ${bigLabel} queues must hold ${smallSize} eligible tasks each, got ${atStart[0]?.tasks} and ${atStart[2]?.tasks}`);
    }

    for (const s of shapes) await measureClaims(s, quick ? 10 : 100, false);
    const { ratios, mixedRatios } = await latencyRounds(ctx, { small, mixedSmall, big }, rounds, (s) => measureClaims(s, perRound, true));
    const atEnd = await Promise.all(shapes.map(eligible));
    const stat = latencyStat;
    return {
      metrics: [
        metric(
          'pgClaimLatency100kTo1kRatio',
          `PostgreSQL: median claim latency, ${big.label} ready (99% ineligible) ÷ 1k ready (the same 1,000 eligible tasks)`,
          median(ratios),
          LATENCY_TARGET,
          ratios,
        ),
      ],
      context: [
        ...shapes.map((s) => ({ label: `median claim latency ${s.label} (all samples)`, value: fmtUs(median(s.samplesNs)) })),
        { label: `p90 claim latency ${big.label} / ${small.label}`, value: `${fmtUs(quantile(big.samplesNs, 0.9))} / ${fmtUs(quantile(small.samplesNs, 0.9))}` },
        { label: `${big.label} ÷ ${mixedSmall.label} (10 eligible tasks, not 1,000)`, value: `${median(mixedRatios).toFixed(2)} (median of rounds)` },
        { label: 'eligible (tenant, base priority) levels at the end', value: shapes.map((s, k) => `${s.label} ${atEnd[k]?.levels ?? 'n/a'}`).join(', ') },
        { label: `enqueue fill rate ${big.label} (${bigSize} tasks, ${FILL_LANES} lanes)`, value: `${fmtRate((bigSize + 1) / big.fillSeconds)} in ${big.fillSeconds.toFixed(1)} s` },
        { label: `enqueue fill rate ${small.label}`, value: fmtRate((smallSize + 1) / small.fillSeconds) },
        { label: 'server autovacuum', value: `${autovacuum}; the bench ANALYZEs each queue's tables at 500 and 2,000 tasks, every 10% of a fill, and after it` },
        ...(quick ? [{ label: 'NOTE', value: `quick mode: the large queue has ${bigSize} tasks, not 100k` }] : []),
      ],
      raw: {
        server: PG_URL.replace(/:[^:@/]*@/, ':***@'),
        config: LATENCY_CONFIG,
        fillLanes: FILL_LANES,
        autovacuum,
        shape: { smallTenants: SMALL.length, priorities: '0..30 seeded', enqueueSpanMs: SPAN_MS, clockStepPerClaimMs: STEP_MS },
        claimsPerRound: perRound,
        ratiosPerRound: ratios.map((v) => sig(v)),
        ratiosAgainst1kMixPerRound: mixedRatios.map((v) => sig(v)),
        eligibleAtStart: Object.fromEntries(shapes.map((s, k) => [s.label, atStart[k]])),
        eligibleAtEnd: Object.fromEntries(shapes.map((s, k) => [s.label, atEnd[k]])),
        large: stat(big),
        small: stat(small),
        smallWithLargeMix: stat(mixedSmall),
      },
    };
  } finally {
    for (const s of shapes) {
      for (const q of s.lanes) await q.close().catch(() => undefined);
      await s.queue.close().catch(() => undefined);
    }
    await dropSchemas(PG_URL, created).catch((e) => ctx.progress(`  WARNING: dropping schemas: ${String(e)}`));
  }
}

export const pgClaimLatencySection: BenchSection = {
  id: 'pg-claim-latency',
  title: 'Claim latency on PostgreSQL with a large, mostly ineligible backlog',
  run,
};
