import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/queue/config.ts';
import { configOf } from '../checkers/timeline.ts';
import { specConfig } from '../checkers/spec-rules.ts';
import { SeededRandom } from '../random.ts';
import { simulate } from '../run-scenario.ts';
import { parseScenarioFile } from '../scenario-schema.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { World } from '../world.ts';
import { drawConfig, NEEDS_PER_LIVENESS, QUEUE_OPTIONS, scenarioForSeed, WORKER_OPTIONS, type DrawnConfig } from './config-swarm.ts';
import { drawnPartOf } from './index.ts';

function spec(extra: Record<string, unknown>) {
  const parsed = parseScenarioFile({ name: 'config-swarm-test', workload: [{ kind: 'topics', tenants: ['acme', 'globex'] }], faults: [{ kind: 'swarm' }], ...extra });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.spec;
}

const swarmed = spec({ configSwarm: {} });
const draw = (seed: string, scenario = swarmed): DrawnConfig => scenarioForSeed(scenario, seed).drawn as DrawnConfig;
const SEEDS = Array.from({ length: 400 }, (_, index) => String(index));

describe('the configuration swarm (configSwarm)', () => {
  it('resolves to every queue option and the worker options when the file fixes none, and refuses an unknown option', () => {
    expect(swarmed.configSwarm).toEqual({ allDefaultsProbability: 0.05, defaultProbability: 0.25, edgeProbability: 0.4, queue: [...QUEUE_OPTIONS], workers: [...WORKER_OPTIONS] });
    const bad = parseScenarioFile({ name: 'x', workload: [{ kind: 'topics' }], configSwarm: { redraw: ['leaseMS'] } });
    expect(bad.ok ? [] : bad.problems.map((problem) => problem.field)).toEqual(['configSwarm.redraw[0]']);
    const unknown = parseScenarioFile({ name: 'x', workload: [{ kind: 'topics' }], configSwarm: { edgeProbabilty: 0.5 } });
    expect(unknown.ok).toBe(false);
  });

  it('is deterministic per seed, differs between seeds, and leaves a scenario without the section untouched', () => {
    expect(draw('42')).toEqual(draw('42'));
    expect(new Set(SEEDS.slice(0, 50).map((seed) => JSON.stringify(draw(seed)))).size).toBeGreaterThan(45);
    const plain = spec({});
    expect(scenarioForSeed(plain, '42')).toEqual({ scenario: plain });
  });

  it('draws only from the valid space: resolveConfig accepts every draw, and worker options are positive integers', () => {
    for (const seed of SEEDS) {
      const { queue, workers } = draw(seed);
      expect(() => resolveConfig(queue), `seed ${seed}: ${JSON.stringify(queue)}`).not.toThrow();
      for (const option of WORKER_OPTIONS) expect(Number.isSafeInteger(workers[option]) && workers[option] >= 1, `seed ${seed} ${option}`).toBe(true);
    }
  });

  it('reaches the default, an edge and a ranged value of every option over 400 seeds', () => {
    const seen = new Map<string, Set<string>>();
    for (const seed of SEEDS) for (const [option, how] of Object.entries(draw(seed).how)) seen.set(option, (seen.get(option) ?? new Set()).add(how));
    for (const option of [...QUEUE_OPTIONS, ...WORKER_OPTIONS]) expect([...(seen.get(option) ?? [])].sort(), option).toEqual(['default', 'edge', 'range']);
    for (const seed of SEEDS) {
      const drawn = draw(seed);
      for (const [option, how] of Object.entries(drawn.how)) {
        if ((QUEUE_OPTIONS as readonly string[]).includes(option)) expect(Object.hasOwn(drawn.queue, option), `seed ${seed} ${option} ${how}`).toBe(how !== 'default');
      }
    }
  });

  it('hits the boundaries: lease = 3 heartbeats, perTenantLimit = globalLimit, capacity = globalLimit, maxDelay = baseDelay, limits and attempts of 1, both policies', () => {
    const configs = SEEDS.map((seed) => resolveConfig(draw(seed).queue));
    const some = (label: string, test: (config: (typeof configs)[number]) => boolean) => expect(configs.some(test), label).toBe(true);
    some('leaseMs = 3 x heartbeatMs', (c) => c.leaseMs === 3 * c.heartbeatMs);
    some('perTenantLimit = globalLimit > 1', (c) => c.perTenantLimit === c.globalLimit && c.globalLimit > 1);
    some('capacity = globalLimit', (c) => c.capacity === c.globalLimit);
    some('globalLimit 1', (c) => c.globalLimit === 1);
    some('maxDelayMs = baseDelayMs', (c) => c.maxDelayMs === c.baseDelayMs);
    some('maxAttempts 1', (c) => c.maxAttempts === 1);
    some('maxDeliveries 1', (c) => c.maxDeliveries === 1);
    some('a tenant limit of 1', (c) => Object.values(c.tenantLimits).includes(1));
    some('graceMs 0', (c) => c.graceMs === 0);
    some('agingCap 0', (c) => c.agingCap === 0);
    some('busyRetries 0', (c) => c.busyRetries === 0);
    some('reconciliation auto', (c) => c.reconciliation === 'auto');
    some('reconciliation hold', (c) => c.reconciliation === 'hold');
    some('every default', (c) => JSON.stringify(c) === JSON.stringify(resolveConfig({})));
  });

  it('keeps what the file fixes unless redraw names it; keep is never drawn', () => {
    const fixed = spec({ queue: { globalLimit: 3, capacity: 50 }, workers: { slots: 2 }, configSwarm: {} });
    expect(fixed.configSwarm?.queue).not.toContain('globalLimit');
    expect(fixed.configSwarm?.workers).not.toContain('slots');
    for (const seed of SEEDS.slice(0, 100)) {
      const drawn = draw(seed, fixed);
      expect(drawn.queue).toMatchObject({ globalLimit: 3, capacity: 50 });
      expect(drawn.workers.slots).toBe(2);
      expect(resolveConfig(drawn.queue).perTenantLimit).toBeLessThanOrEqual(3);
    }
    const redrawn = spec({ queue: { globalLimit: 3 }, configSwarm: { redraw: ['globalLimit'], keep: ['reconciliation', 'slots'] } });
    expect(redrawn.configSwarm?.queue).toContain('globalLimit');
    expect(redrawn.configSwarm?.queue).not.toContain('reconciliation');
    expect(redrawn.configSwarm?.workers).not.toContain('slots');
    expect(new Set(SEEDS.slice(0, 100).map((seed) => draw(seed, redrawn).queue.globalLimit)).size).toBeGreaterThan(2);
  });

  it('draws within fixed options that bound it: a fixed heartbeat, a fixed lease, a fixed base delay', () => {
    for (const seed of SEEDS.slice(0, 100)) {
      const random = () => new SeededRandom(seed).fork('config-swarm');
      const withHeartbeat = drawConfig(random(), { ...swarmed, queue: { heartbeatMs: 20_000 } }, { ...swarmed.configSwarm!, queue: ['leaseMs'] });
      expect(withHeartbeat.queue.leaseMs ?? 30_000).toBeGreaterThanOrEqual(60_000);
      const withLease = drawConfig(random(), { ...swarmed, queue: { leaseMs: 6_000 } }, { ...swarmed.configSwarm!, queue: ['heartbeatMs'] });
      expect(withLease.queue.heartbeatMs).toBeLessThanOrEqual(2_000);
      const withBase = drawConfig(random(), { ...swarmed, queue: { baseDelayMs: 120_000 } }, { ...swarmed.configSwarm!, queue: ['maxDelayMs'] });
      expect(withBase.queue.maxDelayMs).toBeGreaterThanOrEqual(120_000);
    }
  });

  it('draws from its own stream: the workload and the fault plan of a seed are the same with and without it', () => {
    const plain = spec({});
    for (const seed of ['1', '2', '3']) {
      const a = new World(plain, seed);
      const b = new World(scenarioForSeed(swarmed, seed).scenario, seed);
      expect(b.arrivals).toEqual(a.arrivals);
      expect(b.plan).toEqual(a.plan);
    }
  });

  it('runs with the drawn configuration: recorded first in the history, given to the queue, and what the checkers judge', async () => {
    const scenario = catalogueScenario('config-swarm');
    for (const seed of ['1', '2', '3', '4']) {
      const drawn = draw(seed, scenario);
      const { world, report } = await simulate({ scenario, seed });
      expect(report.violations).toEqual([]);
      expect(world.history.entries()[0]).toMatchObject({ type: 'note', kind: 'config-swarm', data: JSON.parse(JSON.stringify(drawn)) });
      expect(world.scenario.queue).toEqual(drawn.queue);
      expect(world.scenario.workers).toEqual(drawn.workers);
      // The judge reads the drawn configuration (restated from the SPEC, not resolveConfig's)...
      expect(configOf(world)).toEqual(specConfig(drawn.queue));
      // ... and the queue was opened with it: every lease the core granted is the drawn leaseMs long.
      const leaseMs = resolveConfig(drawn.queue).leaseMs;
      const claims = world.events.filter((event) => event.type === 'claimed');
      expect(claims.length).toBeGreaterThan(0);
      for (const claim of claims) expect((claim.data as { leaseUntil: number }).leaseUntil - claim.at).toBe(leaseMs);
    }
  });

  it('with budgets, draws tenant- and globally-scoped rate, concurrency and total budgets with needs the queue admits, from a stream of its own (issue 35)', () => {
    const withBudgets = spec({ configSwarm: { budgets: true } });
    expect(withBudgets.configSwarm?.budgets).toBe(true);
    const kinds = new Map<string, number>();
    for (const seed of SEEDS) {
      const { scenario, drawn } = scenarioForSeed(withBudgets, seed);
      // Every other option is drawn as without budgets.
      expect({ ...drawn!.queue, budgets: undefined }).toEqual({ ...draw(seed).queue, budgets: undefined });
      const budgets = scenario.queue.budgets ?? {};
      expect(Object.keys(budgets).length).toBeGreaterThan(0);
      const needs = drawnPartOf(scenario.workload)?.needs ?? {};
      expect(Object.keys(needs).sort()).toEqual(Object.keys(budgets).sort());
      expect(() => resolveConfig(scenario.queue)).not.toThrow();
      for (const [name, budget] of Object.entries(budgets)) {
        const need = needs[name]!;
        const key = `${budget.kind}/${budget.kind === 'total' ? budget.per : (budget.scope ?? 'global')}`;
        kinds.set(key, (kinds.get(key) ?? 0) + 1);
        expect(need, `${seed} ${name}`).toBeGreaterThan(0);
        expect(need, `${seed} ${name}`).toBeLessThanOrEqual(budget.kind === 'rate' ? budget.capacity : budget.limit);
      }
    }
    // Each kind at each scope, tenant scope the more often.
    for (const key of ['rate/tenant', 'rate/global', 'concurrency/tenant', 'concurrency/global', 'total/run', 'total/session']) expect(kinds.get(key) ?? 0, key).toBeGreaterThan(10);
    expect(kinds.get('rate/tenant')!).toBeGreaterThan(kinds.get('rate/global')!);
    // Without the flag nothing is drawn: the scenario's own budgets and needs stay.
    expect(scenarioForSeed(swarmed, '3').scenario.workload).toEqual(swarmed.workload);
  });

  it('lengthens the liveness phase of a seed whose rate bucket refills fewer than NEEDS_PER_LIVENESS needs over it, and only its length', async () => {
    const catalogue = catalogueScenario('config-swarm');
    let longer = 0;
    for (const seed of SEEDS) {
      const { scenario } = scenarioForSeed(catalogue, seed);
      const bucket = scenario.queue.budgets?.swarm_tokens;
      const { livenessMs, safetyMs } = scenario.phases;
      expect(safetyMs).toBe(catalogue.phases.safetyMs);
      if (bucket?.kind !== 'rate') {
        expect(livenessMs, seed).toBe(catalogue.phases.livenessMs);
        continue;
      }
      const need = drawnPartOf(scenario.workload)!.needs!.swarm_tokens!;
      const covered = (bucket.refill * livenessMs) / bucket.periodMs / need;
      expect(covered, seed).toBeGreaterThanOrEqual(NEEDS_PER_LIVENESS);
      if (livenessMs > catalogue.phases.livenessMs) {
        longer++;
        expect(covered, seed).toBeLessThan(NEEDS_PER_LIVENESS + 1);
      }
    }
    expect(longer).toBeGreaterThan(0);
    // The seed that did not drain within 30 minutes: a global bucket refilling 858 tokens every 45 s for a need of 2,471.
    const slow = '79080267256442';
    const { scenario } = scenarioForSeed(catalogue, slow);
    expect(scenario.queue.budgets?.swarm_tokens).toMatchObject({ kind: 'rate', refill: 858, scope: 'global' });
    expect(scenario.phases.livenessMs).toBeGreaterThan(catalogue.phases.livenessMs);
    const { world, report } = await simulate({ scenario: catalogue, seed: slow });
    expect(world.scenario.phases.livenessMs).toBe(scenario.phases.livenessMs);
    expect(report.violations).toEqual([]);
  });
});

