import { z } from 'zod';
import { DEFAULT_CONFIG, resolveConfig } from '../../src/queue/config.ts';
import type { BudgetSpec, Needs, QueueConfig, Tier } from '../../src/queue/types.ts';
import { SeededRandom, type Seed } from '../random.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { WORKERS_DEFAULTS } from '../scenario-sections.ts';
import { flag, list, oneOf, probability, strict, withDefaults } from '../schema-kit.ts';
import { longestScript, workloadTenants } from './index.ts';

/**
 * The configuration swarm (issue 15 item 3): per seed, the queue configuration and the worker options
 * are drawn from the valid space, from the seed's own stream `config-swarm`, so every other draw of the
 * seed (workload, faults, the core's jitter) stays where it was.
 *
 * With `allDefaultsProbability` a seed leaves every option it draws at its default. Otherwise each
 * option the swarm draws is, with `defaultProbability`, left unset (a queue option: resolveConfig's
 * default runs; a worker option: the simulator's default, WORKERS_DEFAULTS), otherwise with
 * `edgeProbability` an edge of the valid space (the least value allowed, a ratio at its boundary:
 * leaseMs = 3 x heartbeatMs, perTenantLimit = globalLimit, capacity = globalLimit, maxDelayMs =
 * baseDelayMs, limits and attempts of 1, zero grace, zero aging cap, zero busy retries), otherwise a
 * value from a typical range. Options the scenario fixes stay fixed unless the section names them in
 * `redraw`; options named in `keep` are never drawn.
 *
 * What is not drawn at its edge, and why (all stay in the valid space):
 * - time options that set how often something runs (leaseMs and heartbeatMs, idleWaitMs) are drawn from
 *   3 s / 100 ms up, not from 1 ms: a 1 ms heartbeat or idle poll is valid but makes a seed cost
 *   minutes of loop events, not a different behaviour;
 * - maxInputBytes is drawn from 64 KiB up: below the inputs' size every enqueue is refused
 *   (input_too_large), which the enqueue tests cover; here it would leave a run with no tasks;
 * - tenantLimits are drawn from 1 up: a limit of 0 pauses the tenant (A2), whose tasks then cannot
 *   drain, which is what a pause means, not a liveness failure of the queue.
 *
 * The drawn scenario is applied before the World opens the queue (`scenarioForSeed`, called by
 * run-scenario.ts), so `world.scenario` is the scenario the run really used, and every checker reads
 * the drawn configuration from it (checkers/timeline.ts configOf), never the file's.
 */

/**
 * Options that mean something only with the workload they were written for: a budget is what the
 * tasks' `needs` name (A1), so a drawn set of budgets would either name none of them (a draw that
 * changes nothing) or leave the needs naming budgets that are gone (every enqueue invalid_input). A
 * scenario states its budgets with its workload; the swarm draws the rest.
 */
export const WORKLOAD_COUPLED_OPTIONS: readonly (keyof QueueConfig)[] = ['budgets'];

/** The queue options, every field of QueueConfig but the workload-coupled ones, in the order of its defaults (the order the draws take). */
export const QUEUE_OPTIONS = (Object.keys(DEFAULT_CONFIG) as (keyof QueueConfig)[]).filter((option) => !WORKLOAD_COUPLED_OPTIONS.includes(option)) as readonly (keyof QueueConfig)[];
export type QueueOption = keyof QueueConfig;

/** The worker options a scenario states (ScenarioSpec.workers) that the swarm may draw; the pool size is not one. */
export const WORKER_OPTIONS = ['slots', 'idleWaitMs', 'toolTimeoutMs', 'maxSteps'] as const;
export type WorkerOption = (typeof WORKER_OPTIONS)[number];

export interface ConfigSwarmSpec {
  /** Per seed: probability that every option is left at its default (the default configuration whole). */
  allDefaultsProbability: number;
  /** Per option: probability that it is left at its default. */
  defaultProbability: number;
  /** Per option not left at its default: probability that it takes an edge value of the valid space. */
  edgeProbability: number;
  /** The queue options drawn per seed. */
  queue: QueueOption[];
  /** The worker options drawn per seed. */
  workers: WorkerOption[];
  /**
   * Issue 35 item 3: also draw named budgets (A1) with the needs of the drawn tasks, from the stream
   * `config-swarm/budgets`: a rate bucket metered in tokens (every further model call of a run reserves
   * again), a concurrency budget and a total per run or per session, each of scope tenant or global, so
   * tenants' own buckets and semaphores stand at different levels at the same instant. Absent or false:
   * none drawn (the scenario's own budgets, if any, stay).
   */
  budgets?: boolean;
}

export const CONFIG_SWARM_DEFAULTS = { allDefaultsProbability: 0.05, defaultProbability: 0.25, edgeProbability: 0.4 };

/** Where an option's value came from in one seed's draw. */
export type DrawnHow = 'default' | 'edge' | 'range';

/** One seed's draw: what the run's queue and workers were given, and how each drawn option got it. */
export interface DrawnConfig {
  queue: Partial<QueueConfig>;
  workers: ScenarioSpec['workers'];
  how: Partial<Record<QueueOption | WorkerOption, DrawnHow>>;
}

const optionNames = [...QUEUE_OPTIONS, ...WORKER_OPTIONS] as unknown as [string, ...string[]];

const commonFields = {
  allDefaultsProbability: probability().meta({ description: 'Per seed: probability that every drawn option is left at its default, the default configuration whole; default 0.05.' }),
  defaultProbability: probability().meta({ description: 'Per option: probability that it is left at its default (a queue option unset, so the core default runs); default 0.25.' }),
  edgeProbability: probability().meta({ description: 'Per option not left at its default: probability of an edge value (least allowed, ratio at its boundary); default 0.4.' }),
};

/** The parts form's top-level `configSwarm` section. */
export const configSwarmSection = strict(
  {
    ...withDefaults(commonFields, CONFIG_SWARM_DEFAULTS),
    redraw: list(oneOf(optionNames, 'a queue or worker option'))
      .default(() => [])
      .meta({ description: 'Options this file fixes in queue or workers that the swarm draws anyway.' }),
    keep: list(oneOf(optionNames, 'a queue or worker option'))
      .default(() => [])
      .meta({ description: 'Options the swarm never draws (they keep the file\'s value or the default).' }),

    budgets: flag()
      .optional()
      .meta({ description: 'Also draw named budgets (a tenant- or globally-scoped token rate bucket, concurrency budget and run or session total) and the drawn tasks\' needs of them, per seed; default false.' }),
  },
  'Draw the queue configuration and worker options per seed from the valid space (defaults and edges included); options the file fixes stay fixed unless named in redraw.',
).optional();
export type ConfigSwarmSection = NonNullable<z.output<typeof configSwarmSection>>;

/** The explicit form's `configSwarm`: every list stated. */
export const configSwarmSchema = strict(
  {
    ...commonFields,
    queue: list(oneOf(QUEUE_OPTIONS as unknown as [string, ...string[]], 'a queue option')),
    workers: list(oneOf(WORKER_OPTIONS as unknown as [string, ...string[]], 'a worker option')),

    budgets: flag().optional(),
  },
  'The configuration swarm: the queue and worker options drawn per seed.',
);

/**
 * The parts form's section resolved: the queue options are those the file did not fix (its `queue`
 * keys), the worker options those it did not state in `workers` (`statedWorkers`, from the raw file,
 * since the parts form fills in the defaults), plus `redraw`, less `keep`.
 */
export function resolveConfigSwarm(section: ConfigSwarmSection, fixedQueue: readonly string[], statedWorkers: readonly string[]): ConfigSwarmSpec {
  const keep = new Set(section.keep);
  const redraw = new Set(section.redraw);
  const drawn = (option: string, fixed: readonly string[]) => !keep.has(option) && (redraw.has(option) || !fixed.includes(option));
  return {
    allDefaultsProbability: section.allDefaultsProbability,
    defaultProbability: section.defaultProbability,
    edgeProbability: section.edgeProbability,
    queue: QUEUE_OPTIONS.filter((option) => drawn(option, fixedQueue)),
    workers: WORKER_OPTIONS.filter((option) => drawn(option, statedWorkers)),
    ...(section.budgets === true ? { budgets: true } : {}),
  };
}

/**
 * One seed's configuration: the scenario's queue and workers with the swarm's options drawn in, in an
 * order where each option is drawn within what the options before it allow (globalLimit before
 * capacity and perTenantLimit, leaseMs before heartbeatMs, baseDelayMs before maxDelayMs). A default
 * that the options drawn before it would make invalid (heartbeatMs 10 s under a drawn 6 s lease) is
 * drawn instead. The result is checked by resolveConfig: a draw outside the valid space is a bug of
 * this file, thrown.
 */
export function drawConfig(random: SeededRandom, scenario: ScenarioSpec, swarm: ConfigSwarmSpec): DrawnConfig {
  const queue: Partial<QueueConfig> = { ...structuredClone(scenario.queue) };
  const workers = { ...scenario.workers };
  const how: DrawnConfig['how'] = {};
  const allDefaults = random.chance(swarm.allDefaultsProbability);
  const drawing = new Set<string>([...swarm.queue, ...swarm.workers]);
  for (const option of drawing) {
    if ((QUEUE_OPTIONS as readonly string[]).includes(option)) delete queue[option as QueueOption];
  }
  /** The values in force so far: fixed, drawn, or the core default (not yet validated: an option still to draw may be what makes them fit). */
  const effective = (): QueueConfig => ({ ...DEFAULT_CONFIG, ...queue }) as QueueConfig;
  const choose = <T>(option: QueueOption | WorkerOption, pick: { defaultOk: boolean; edges: readonly T[]; range: () => T }): T | undefined => {
    if (pick.defaultOk && (allDefaults || random.chance(swarm.defaultProbability))) {
      how[option] = 'default';
      return undefined;
    }
    if (pick.edges.length > 0 && random.chance(swarm.edgeProbability)) {
      how[option] = 'edge';
      return random.pick(pick.edges);
    }
    how[option] = 'range';
    return pick.range();
  };
  const set = <K extends QueueOption>(option: K, value: QueueConfig[K] | undefined) => {
    if (value !== undefined) queue[option] = value;
  };
  const drawQueue = <K extends QueueOption>(option: K, pick: (config: QueueConfig) => { defaultOk: boolean; edges: readonly QueueConfig[K][]; range: () => QueueConfig[K] }) => {
    if (!drawing.has(option)) return;
    set(option, choose(option, pick(effective())));
  };
  const spread = (low: number, high: number) => (low >= high ? low : random.int(low, high));

  // Limits: globalLimit first, within a fixed capacity; capacity and perTenantLimit around it.
  const capacityFixed = !drawing.has('capacity');
  drawQueue('globalLimit', (config) => {
    const least = drawing.has('perTenantLimit') ? 1 : config.perTenantLimit;
    const most = Math.max(least, capacityFixed ? Math.min(config.capacity, 8) : 8);
    const edges = [...new Set([least, ...(capacityFixed && config.capacity <= 8 ? [config.capacity] : [])])];
    return { defaultOk: DEFAULT_CONFIG.globalLimit >= least && (!capacityFixed || config.capacity >= DEFAULT_CONFIG.globalLimit), edges, range: () => spread(least, most) };
  });
  drawQueue('capacity', (config) => ({ defaultOk: config.globalLimit <= DEFAULT_CONFIG.capacity, edges: [config.globalLimit], range: () => spread(config.globalLimit, Math.max(config.globalLimit, 200)) }));
  drawQueue('perTenantLimit', (config) => ({ defaultOk: true, edges: [1, config.globalLimit], range: () => spread(1, config.globalLimit) }));
  const tenants = workloadTenants(scenario.workload);
  drawQueue('tenantLimits', (config) => ({
    defaultOk: true,
    edges: [Object.fromEntries(tenants.map((tenant) => [tenant, 1])), Object.fromEntries(tenants.map((tenant) => [tenant, config.globalLimit]))],
    range: () => Object.fromEntries(tenants.filter(() => random.chance(0.5)).map((tenant) => [tenant, spread(1, config.globalLimit)])),
  }));

  // Q9: the lease holds three heartbeats; the edge is exactly three.
  drawQueue('leaseMs', (config) => {
    const least = drawing.has('heartbeatMs') ? 3_000 : 3 * config.heartbeatMs;
    return { defaultOk: DEFAULT_CONFIG.leaseMs >= least, edges: [least], range: () => spread(least, Math.max(least, 90_000)) };
  });
  drawQueue('heartbeatMs', (config) => {
    const most = Math.floor(config.leaseMs / 3);
    return { defaultOk: DEFAULT_CONFIG.heartbeatMs <= most, edges: [most], range: () => spread(Math.max(1, Math.floor(config.leaseMs / 10)), most) };
  });

  drawQueue('agingPeriodMs', () => ({ defaultOk: true, edges: [1], range: () => spread(1_000, 120_000) }));
  drawQueue('agingCap', () => ({ defaultOk: true, edges: [0, 30], range: () => spread(0, 60) }));
  drawQueue('maxAttempts', () => ({ defaultOk: true, edges: [1], range: () => spread(1, 6) }));
  drawQueue('maxDeliveries', () => ({ defaultOk: true, edges: [1], range: () => spread(1, 6) }));
  // Q16: maxDelayMs >= baseDelayMs; the edge is equality (no growth at all).
  drawQueue('baseDelayMs', (config) => ({ defaultOk: drawing.has('maxDelayMs') || config.maxDelayMs >= DEFAULT_CONFIG.baseDelayMs, edges: [1], range: () => spread(1, Math.min(5_000, drawing.has('maxDelayMs') ? 5_000 : config.maxDelayMs)) }));
  drawQueue('maxDelayMs', (config) => ({ defaultOk: DEFAULT_CONFIG.maxDelayMs >= config.baseDelayMs, edges: [config.baseDelayMs], range: () => spread(config.baseDelayMs, Math.max(config.baseDelayMs, 60_000)) }));
  drawQueue('maxRetryAgeMs', () => ({ defaultOk: true, edges: [1], range: () => spread(5_000, 600_000) }));
  drawQueue('maxInputBytes', () => ({ defaultOk: true, edges: [64 * 1024], range: () => spread(64 * 1024, 1024 * 1024) }));
  drawQueue('incidentBucketMs', () => ({ defaultOk: true, edges: [1], range: () => spread(1_000, 600_000) }));
  drawQueue('tierHolds', () => ({
    defaultOk: true,
    edges: [{ standard: 0, long: 0 } as Record<Tier, number>, { standard: 1, long: 1 } as Record<Tier, number>],
    range: () => ({ standard: spread(0, 100), long: spread(0, 200) }) as Record<Tier, number>,
  }));
  drawQueue('tokensPerCredit', () => ({ defaultOk: true, edges: [1], range: () => spread(100, 10_000) }));
  drawQueue('holdTtlMs', () => ({ defaultOk: true, edges: [1], range: () => spread(5_000, 1_800_000) }));
  drawQueue('reconciliation', () => ({ defaultOk: true, edges: ['auto'] as const, range: () => random.pick(['hold', 'auto'] as const) }));
  drawQueue('graceMs', () => ({ defaultOk: true, edges: [0], range: () => spread(0, 60_000) }));
  drawQueue('busyTimeoutMs', () => ({ defaultOk: true, edges: [0], range: () => spread(0, 10_000) }));
  drawQueue('busyRetries', () => ({ defaultOk: true, edges: [0], range: () => spread(0, 6) }));

  const slowestTool = scenario.tools.latencyMs[1];
  const longest = longestScript(scenario.workload.scripts);
  const drawWorker = (option: WorkerOption, edges: readonly number[], range: () => number) => {
    if (!drawing.has(option)) return;
    workers[option] = choose(option, { defaultOk: true, edges, range }) ?? WORKERS_DEFAULTS[option];
  };
  drawWorker('slots', [1, 4], () => spread(1, 4));
  drawWorker('idleWaitMs', [100], () => spread(100, 3_000));
  // The slowest tool call just fits, or just does not (it then fails tool_timeout); 1 ms: every call does.
  drawWorker('toolTimeoutMs', [1, Math.max(1, slowestTool - 1), Math.max(1, slowestTool)], () => spread(500, 30_000));
  // The step limit at the longest script's length, either side of it (a run that reaches it ends
  // business_error, not retried); 1: every run of more than its first step.
  drawWorker('maxSteps', [1, longest, longest + 1], () => spread(1, 16));
  // Drawn after the worker options, so the draws of every option before it are what they were before it existed.
  drawQueue('criticalHeadroom', () => ({ defaultOk: true, edges: [0], range: () => spread(0, 20) }));
  drawQueue('sessionPolicy', () => ({ defaultOk: true, edges: ['versioned'] as const, range: () => random.pick(['serial', 'cancel_in_progress', 'versioned'] as const) }));
  // A5: drawn last, so every draw before it is what it was before it existed.
  // A3: fair share with weights over the workload's tenants (the weights matter only under fair_share).
  drawQueue('fairness', () => ({ defaultOk: true, edges: ['fair_share'] as const, range: () => random.pick(['priority', 'fair_share'] as const) }));
  drawQueue('tenantWeights', () => ({
    defaultOk: true,
    edges: [Object.fromEntries(tenants.map((tenant, index) => [tenant, index === 0 ? 3 : 1]))],
    range: () => Object.fromEntries(tenants.filter(() => random.chance(0.5)).map((tenant) => [tenant, spread(1, 4)])),
  }));
  drawQueue('stuckAfterMs', () => ({ defaultOk: true, edges: [1], range: () => spread(1_000, 1_200_000) }));

  resolveConfig(queue);
  return { queue, workers, how };
}

/**
 * The scenario a run of `seed` really uses: the scenario itself, or, with a configSwarm section, its
 * queue and workers drawn for the seed (the section stays, so a replay draws the same).
 */
export function scenarioForSeed(scenario: ScenarioSpec, seed: Seed): { scenario: ScenarioSpec; drawn?: DrawnConfig } {
  if (scenario.configSwarm === undefined) return { scenario };
  const random = new SeededRandom(seed).fork('config-swarm');
  const drawn = drawConfig(random, scenario, scenario.configSwarm);
  if (scenario.configSwarm.budgets !== true) return { scenario: { ...scenario, queue: drawn.queue, workers: drawn.workers }, drawn };
  // Drawn from a stream of its own, so every option above is drawn as it was without budgets.
  const { budgets, needs } = drawBudgets(random.fork('budgets'));
  drawn.queue = { ...drawn.queue, budgets: { ...drawn.queue.budgets, ...budgets } };
  resolveConfig(drawn.queue);
  // The drawn tasks (the topics or rounds part) need them; tasks and floods keep their own needs.
  const workload = { ...scenario.workload, parts: scenario.workload.parts.map((item) => (item.kind === 'topics' || item.kind === 'rounds' ? { ...item, needs: { ...item.needs, ...needs } } : item)) };
  const phases = { ...scenario.phases, livenessMs: livenessFor(scenario.phases.livenessMs, budgets.swarm_tokens, needs.swarm_tokens) };
  return { scenario: { ...scenario, phases, queue: drawn.queue, workers: drawn.workers, workload }, drawn };
}

/** How many needs of the drawn rate bucket its refills cover over the liveness phase, at the least (livenessFor). */
export const NEEDS_PER_LIVENESS = 50;

/**
 * The liveness phase of a seed with budgets: the scenario's own, or longer when the drawn rate bucket
 * refills fewer than NEEDS_PER_LIVENESS needs over it, so the drawn work can drain once the faults stop
 * and a slow bucket is not a liveness failure of the queue. Seed 79080267256442 drew a global bucket
 * refilling 858 tokens every 45 s for a need of 2,471 (about 14 needs in 30 minutes, with one slot and
 * no aging): one task was still ready when the phase ended, and it drained with 30 needs' worth. Only
 * the phase's length changes, so every draw of a seed and its safety phase are what they were.
 */
function livenessFor(livenessMs: number, bucket: BudgetSpec | undefined, need: number | undefined): number {
  if (bucket?.kind !== 'rate' || need === undefined) return livenessMs;
  return Math.max(livenessMs, Math.ceil((NEEDS_PER_LIVENESS * need * bucket.periodMs) / bucket.refill));
}

/**
 * Issue 35 item 3: budgets of scope tenant beside global ones, drawn per seed, with what every drawn
 * task needs of them (A1). Each budget is drawn with probability 0.8 (at least one always is):
 * - swarm_tokens, a rate bucket metered in tokens: a claim reserves the need, and every further model
 *   call of the run reserves again (src/worker/run.ts reserve), from its own tenant's bucket under scope
 *   tenant; small capacities and slow refills empty a busy tenant's bucket while another's has room;
 * - swarm_slots, a concurrency budget of 1 to 3 per tenant (or for everyone);
 * - swarm_total, a total per run or per session, metered in model calls or tokens, at times below what a
 *   run needs (the run, or the session's later versions, end budget_exhausted).
 * Scope tenant three times in four. Needs stay within each budget's capacity, so enqueues are admitted.
 */
export function drawBudgets(random: SeededRandom): { budgets: Record<string, BudgetSpec>; needs: Needs } {
  const budgets: Record<string, BudgetSpec> = {};
  const needs: Needs = {};
  const scope = () => (random.chance(0.75) ? 'tenant' : 'global');
  const pick = [random.chance(0.8), random.chance(0.8), random.chance(0.8)];
  if (!pick.some(Boolean)) pick[random.int(0, 2)] = true;
  if (pick[0]) {
    const capacity = random.int(2_000, 24_000);
    budgets.swarm_tokens = { kind: 'rate', capacity, refill: random.int(Math.ceil(capacity / 4), capacity), periodMs: random.int(5_000, 60_000), scope: scope(), meter: 'tokens' };
    needs.swarm_tokens = random.int(200, Math.min(capacity, 4_000));
  }
  if (pick[1]) {
    budgets.swarm_slots = { kind: 'concurrency', limit: random.int(1, 3), scope: scope() };
    needs.swarm_slots = 1;
  }
  if (pick[2]) {
    const calls = random.chance(0.5);
    const limit = calls ? random.int(2, 12) : random.int(2_000, 40_000);
    budgets.swarm_total = { kind: 'total', limit, per: random.chance(0.5) ? 'run' : 'session', meter: calls ? 'modelCalls' : 'tokens' };
    needs.swarm_total = calls ? 1 : random.int(100, Math.min(limit, 2_000));
  }
  return { budgets, needs };
}

