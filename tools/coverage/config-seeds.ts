/**
 * Which catalogue scenario runs each QueueConfig option with a value other than its default (issue 15:
 * "give every configuration option and policy a seed that runs it"). Read from the effective config the
 * world opens its queue with (resolveConfig over the scenario's `queue` section), for every catalogue
 * scenario; an option no scenario changes is run only at its default by the gate.
 *
 * A scenario with a configSwarm section (config-swarm) has no one config: each seed draws its own
 * (sim/workloads/config-swarm.ts). Its rows count the seeds the check would run: the first N seeds of
 * the scenario as the check plans them (planJobs, sim/check/seeds.ts) and, for each, the queue config
 * scenarioForSeed draws, the function worldFor (sim/seed-world.ts) opens the World with; the row says
 * how many of the N seeds drew the option at another value.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_CONFIG, resolveConfig } from '../../src/queue/config.ts';
import type { QueueConfig } from '../../src/queue/types.ts';
import { gitState } from '../../sim/check/git.ts';
import { planJobs, rootSeed } from '../../sim/check/seeds.ts';
import { catalogueScenario, listScenarios } from '../../sim/scenarios/registry.ts';
import { scenarioForSeed } from '../../sim/workloads/config-swarm.ts';

export interface OptionRow {
  option: string;
  default: string;
  /**
   * Scenario name and the value it runs, for each scenario whose value differs from the default. For a
   * scenario that draws its config per seed: how many of its seeds drew another value (`seeds`), and the
   * values they drew (`value`: the distinct ones, or their span when there are many numbers).
   */
  runs: { scenario: string; value: string; seeds?: { drew: number; of: number } }[];
}

/** A scenario's queue section: one fixed for every seed, or the one each of its first seeds draws. */
export type ScenarioQueue = { name: string; queue: Partial<QueueConfig> } | { name: string; perSeed: Partial<QueueConfig>[] };

function text(value: unknown): string {
  return JSON.stringify(value);
}

/** The values a per-seed scenario drew for one row, in a short form. */
function drawnValues(values: readonly unknown[]): string {
  if (values.every((value) => typeof value === 'number')) {
    const distinct = [...new Set(values as number[])].sort((a, b) => a - b);
    return distinct.length <= 3 ? distinct.join(', ') : `${distinct[0]}..${distinct[distinct.length - 1]}, ${distinct.length} values`;
  }
  const distinct = [...new Set(values.map(text))].sort();
  return distinct.length <= 3 ? distinct.join(', ') : `${distinct.length} values`;
}

/**
 * One row per option, and per policy value for enumerated options (reconciliation: 'hold' and 'auto';
 * the default value's row lists the scenarios that run it too). A per-tenant limit of 0 pauses a
 * tenant (A2): its own row.
 */
export function configCoverage(scenarios: readonly ScenarioQueue[]): OptionRow[] {
  const effective = scenarios.map((scenario) =>
    'perSeed' in scenario ? { name: scenario.name, perSeed: true, configs: scenario.perSeed.map((queue) => resolveConfig(queue)) } : { name: scenario.name, perSeed: false, configs: [resolveConfig(scenario.queue)] },
  );
  /** The scenarios some of whose configs `runs`, with the value each runs (`valueOf`). */
  const runsOf = (runs: (config: QueueConfig) => boolean, valueOf: (config: QueueConfig) => unknown): OptionRow['runs'] =>
    effective.flatMap(({ name, perSeed, configs }) => {
      const running = configs.filter(runs);
      if (running.length === 0) return [];
      if (!perSeed) return [{ scenario: name, value: text(valueOf(running[0] as QueueConfig)) }];
      return [{ scenario: name, value: drawnValues(running.map(valueOf)), seeds: { drew: running.length, of: configs.length } }];
    });
  const rows: OptionRow[] = [];
  for (const option of Object.keys(DEFAULT_CONFIG) as (keyof QueueConfig)[]) {
    const base = DEFAULT_CONFIG[option];
    if (option === 'reconciliation') {
      for (const policy of ['hold', 'auto'] as const) {
        rows.push({
          option: `reconciliation = '${policy}'${policy === base ? ' (default)' : ''}`,
          default: text(base),
          runs: runsOf((config) => config.reconciliation === policy, () => policy),
        });
      }
      continue;
    }
    rows.push({ option, default: text(base), runs: runsOf((config) => text(config[option]) !== text(base), (config) => config[option]) });
    if (option === 'tenantLimits') {
      rows.push({
        option: 'tenantLimits (a tenant paused: limit 0, A2)',
        default: '{}',
        runs: runsOf((config) => Object.values(config.tenantLimits).includes(0), (config) => config.tenantLimits),
      });
    }
  }
  return rows;
}

/**
 * The catalogue's scenarios as the check runs them: a configSwarm scenario by the configs its first
 * `seeds` seeds under the root seed `root` draw (the gate passes its own run's root and seed count).
 */
export function catalogueQueues(draw: { seeds: number; root: string }): ScenarioQueue[] {
  return listScenarios().map(({ name }) => {
    const spec = catalogueScenario(name);
    if (spec.configSwarm === undefined) return { name, queue: spec.queue ?? {} };
    return { name, perSeed: planJobs(draw.root, [name], draw.seeds).map((job) => scenarioForSeed(spec, job.seed).scenario.queue ?? {}) };
  });
}

export function catalogueConfigCoverage(draw: { seeds: number; root: string }): OptionRow[] {
  return configCoverage(catalogueQueues(draw));
}

/** How a run reads in the table: a fixed scenario's value, or how many of a per-seed scenario's seeds drew what. */
function runText(run: OptionRow['runs'][number]): string {
  return run.seeds === undefined ? `${run.scenario} (\`${run.value}\`)` : `${run.scenario}: ${run.seeds.drew} of ${run.seeds.of} seeds (\`${run.value}\`)`;
}

export function renderConfigCoverage(rows: readonly OptionRow[], draw: { seeds: number; root: string }): string[] {
  const missing = rows.filter((row) => row.runs.length === 0);
  return [
    '## Configuration options and policies the catalogue runs',
    '',
    'Each QueueConfig option (src/queue/types.ts, defaults in src/queue/config.ts) and the catalogue scenarios whose effective config runs it with a value other than the default (tools/coverage/config-seeds.ts). An option with no scenario is only ever run at its default by the gate.',
    '',
    `A scenario that draws its configuration per seed (a configSwarm section: config-swarm) is counted over the configs its first ${draw.seeds} seeds under the root seed ${draw.root} draw (planJobs and scenarioForSeed, as the check and worldFor do): how many of them drew the option at another value, and the values drawn.`,
    '',
    '| option | default | scenarios running another value (for a policy value: running that value) |',
    '|---|---|---|',
    ...rows.map((row) => `| ${row.option} | \`${row.default}\` | ${row.runs.length === 0 ? '**none**' : row.runs.map(runText).join(', ')} |`),
    '',
    missing.length === 0 ? 'Every option runs with a non-default value somewhere.' : `Missing (no scenario runs another value): ${missing.map((row) => row.option).join('; ')}.`,
    '',
    "busyTimeoutMs: the world opens its store with a busy timeout of 0 whatever the config says (sim/world.ts: SQLite's busy handler would sleep in real time), so only busyRetries of the pair acts in the gate.",
    '',
  ];
}

/**
 *   npx tsx tools/coverage/config-seeds.ts [--seeds N] [--seed ROOT]
 * The table for the first N seeds (default 100) under the root seed the check would take (--seed, else
 * the commit's, as `leasehold check` without --seed).
 */
function main(): void {
  const { values } = parseArgs({ options: { seeds: { type: 'string', default: '100' }, seed: { type: 'string' } } });
  const seeds = Number(values.seeds);
  if (!Number.isSafeInteger(seeds) || seeds < 1) throw new RangeError(`--seeds must be a positive integer, got ${values.seeds}`);
  const draw = { seeds, root: rootSeed(values.seed, gitState()).seed };
  process.stdout.write(`${renderConfigCoverage(catalogueConfigCoverage(draw), draw).join('\n')}\n`);
}

if (process.argv[1] !== undefined && process.argv[1].endsWith('config-seeds.ts')) main();
