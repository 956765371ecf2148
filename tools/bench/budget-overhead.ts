/**
 * Section `budget-overhead` (issue 16): what named budgets and admission cost the claim -> complete
 * cycle, measured side by side in one run on WAL file databases (synchronous=NORMAL):
 *
 *   - `leasehold`: this build, no budget configured (the cost every queue pays for the feature: a read
 *     of the paused tenants per claim, the admission policy's call, a wider candidate row);
 *   - `leasehold-budgets`: this build with seed 004's shape of budgets, every task needing a browser
 *     session (concurrency), model tokens (a rate bucket, metered) and a per-run total: the cost of
 *     using them (a level read and write per budget at claim and again at the end, a reservation row);
 *   - `leasehold-baseline`: another build's queue, when LEASEHOLD_BENCH_BASELINE names a checkout of it
 *     with its node_modules (e.g. `git worktree add /tmp/base 80e679e && cp -al node_modules /tmp/base/`).
 *
 *   noBudgetCycleToBaselineRatio = median_r( leasehold [r] / leasehold-baseline [r] )   target >= 0.9
 *     (the issue: "the claim cycle loses at most 10% with no budget configured"); only with a baseline.
 *   budgetedCycleToUnbudgetedRatio = median_r( leasehold-budgets [r] / leasehold [r] ): context.
 */
import { runInterleaved, pairedRatios, type Contender } from './interleave.ts';
import { baselineVariant, QueueCycleContender, type CycleVariant } from './queue-cycle.ts';
import { metric, type BenchContext, type BenchSection, type SectionResult } from './registry.ts';
import { fmtRate, median, sig } from './timing.ts';

export const OVERHEAD_TARGET = { op: '>=', value: 0.9 } as const;

/** Seed 004's budgets, sized so that a cycle never waits: the cost measured is the bookkeeping, not a deferral. */
const BUDGETED: CycleVariant = {
  name: 'leasehold-budgets',
  config: {
    budgets: {
      browser_sessions: { kind: 'concurrency', limit: 2, scope: 'global' },
      model_tokens_per_minute: { kind: 'rate', capacity: 2_000_000_000, refill: 2_000_000_000, periodMs: 60_000, scope: 'global', meter: 'tokens' },
      run_tokens: { kind: 'total', limit: 50_000, per: 'run' },
    },
  },
  needs: { browser_sessions: 1, model_tokens_per_minute: 2_000, run_tokens: 2_000 },
};

async function run(ctx: BenchContext): Promise<SectionResult> {
  const backlog = ctx.options.quick ? 200 : 1000;
  const ours = await new QueueCycleContender(ctx.tmpDir, backlog, 'mixed').init();
  const budgeted = await new QueueCycleContender(ctx.tmpDir, backlog, 'mixed', BUDGETED).init();
  const base = await baselineVariant(ctx, 'leasehold-baseline');
  const baseline = base === undefined ? undefined : await new QueueCycleContender(ctx.tmpDir, backlog, 'mixed', base).init();
  const all = [ours, budgeted, ...(baseline === undefined ? [] : [baseline])];
  try {
    const res = await runInterleaved(ctx, all as Contender[], { rounds: ctx.options.rounds, sliceMs: ctx.options.sliceMs, warmupMs: ctx.options.quick ? 150 : 400 });
    for (const c of all) await c.verify();
    const r = res.ratesPerRound;
    const used = pairedRatios(r[budgeted.name]!, r[ours.name]!);
    const metrics = [];
    const context = [
      { label: 'leasehold, no budgets (cycles/s, median)', value: fmtRate(median(r[ours.name]!)) },
      { label: 'leasehold, seed 004 budgets on every task (cycles/s, median)', value: fmtRate(median(r[budgeted.name]!)) },
      { label: 'budgeted / unbudgeted cycle (median of paired rounds)', value: String(sig(median(used))) },
    ];
    let toBase: number[] = [];
    if (baseline !== undefined) {
      toBase = pairedRatios(r[ours.name]!, r[baseline.name]!);
      metrics.push(metric('noBudgetCycleToBaselineRatio', 'cycle with no budget / baseline build', median(toBase), OVERHEAD_TARGET, toBase));
      context.push({ label: 'baseline build (cycles/s, median)', value: fmtRate(median(r[baseline.name]!)) });
    } else {
      context.push({ label: 'baseline build', value: 'not measured (set LEASEHOLD_BENCH_BASELINE to a checkout)' });
    }
    return { metrics, context, raw: { ratesPerRound: r, order: res.order, budgetedToUnbudgeted: used, noBudgetToBaseline: toBase } };
  } finally {
    for (const c of all) await c.close();
  }
}

export const budgetOverheadSection: BenchSection = {
  id: 'budget-overhead',
  title: 'Budgets and admission: cost of the claim -> complete cycle',
  run,
};
