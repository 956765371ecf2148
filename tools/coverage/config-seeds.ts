/**
 * Which catalogue scenario runs each QueueConfig option with a value other than its default (issue 15:
 * "give every configuration option and policy a seed that runs it"). Read from the effective config the
 * world opens its queue with (resolveConfig over the scenario's `queue` section), for every catalogue
 * scenario; an option no scenario changes is run only at its default by the gate.
 */
import { DEFAULT_CONFIG, resolveConfig } from '../../src/queue/config.ts';
import type { QueueConfig } from '../../src/queue/types.ts';
import { catalogueScenario, listScenarios } from '../../sim/scenarios/registry.ts';

export interface OptionRow {
  option: string;
  default: string;
  /** Scenario name and the value it runs, for each scenario whose value differs from the default. */
  runs: { scenario: string; value: string }[];
}

function text(value: unknown): string {
  return JSON.stringify(value);
}

/**
 * One row per option, and per policy value for enumerated options (reconciliation: 'hold' and 'auto';
 * the default value's row lists the scenarios that run it too). A per-tenant limit of 0 pauses a
 * tenant (A2): its own row.
 */
export function configCoverage(scenarios: readonly { name: string; queue: Partial<QueueConfig> }[]): OptionRow[] {
  const effective = scenarios.map(({ name, queue }) => ({ name, config: resolveConfig(queue) }));
  const rows: OptionRow[] = [];
  for (const option of Object.keys(DEFAULT_CONFIG) as (keyof QueueConfig)[]) {
    const base = DEFAULT_CONFIG[option];
    if (option === 'reconciliation') {
      for (const policy of ['hold', 'auto'] as const) {
        rows.push({
          option: `reconciliation = '${policy}'${policy === base ? ' (default)' : ''}`,
          default: text(base),
          runs: effective.filter(({ config }) => config.reconciliation === policy).map(({ name }) => ({ scenario: name, value: text(policy) })),
        });
      }
      continue;
    }
    rows.push({
      option,
      default: text(base),
      runs: effective.filter(({ config }) => text(config[option]) !== text(base)).map(({ name, config }) => ({ scenario: name, value: text(config[option]) })),
    });
    if (option === 'tenantLimits') {
      rows.push({
        option: 'tenantLimits (a tenant paused: limit 0, A2)',
        default: '{}',
        runs: effective.filter(({ config }) => Object.values(config.tenantLimits).includes(0)).map(({ name, config }) => ({ scenario: name, value: text(config.tenantLimits) })),
      });
    }
  }
  return rows;
}

export function catalogueConfigCoverage(): OptionRow[] {
  return configCoverage(listScenarios().map((entry) => ({ name: entry.name, queue: catalogueScenario(entry.name).queue ?? {} })));
}

export function renderConfigCoverage(rows: readonly OptionRow[]): string[] {
  const missing = rows.filter((row) => row.runs.length === 0 || (row.option.startsWith('reconciliation') && row.runs.length === 0));
  return [
    '## Configuration options and policies the catalogue runs',
    '',
    'Each QueueConfig option (src/queue/types.ts, defaults in src/queue/config.ts) and the catalogue scenarios whose effective config runs it with a value other than the default (tools/coverage/config-seeds.ts). An option with no scenario is only ever run at its default by the gate.',
    '',
    '| option | default | scenarios running another value (for a policy value: running that value) |',
    '|---|---|---|',
    ...rows.map((row) => `| ${row.option} | \`${row.default}\` | ${row.runs.length === 0 ? '**none**' : row.runs.map((run) => `${run.scenario} (\`${run.value}\`)`).join(', ')} |`),
    '',
    missing.length === 0 ? 'Every option runs with a non-default value somewhere.' : `Missing (no scenario runs another value): ${missing.map((row) => row.option).join('; ')}.`,
    '',
    "busyTimeoutMs: the world opens its store with a busy timeout of 0 whatever the config says (sim/world.ts: SQLite's busy handler would sleep in real time), so only busyRetries of the pair acts in the gate.",
    '',
  ];
}

if (process.argv[1] !== undefined && process.argv[1].endsWith('config-seeds.ts')) process.stdout.write(`${renderConfigCoverage(catalogueConfigCoverage()).join('\n')}\n`);
