import { resolveConfig } from '../../src/queue/config.ts';
import type { QueueConfig } from '../../src/queue/types.ts';
import { replaySeedCommand } from '../check/counterexample.ts';
import type { GitState } from '../check/git.ts';
import type { ScenarioSource } from '../check/scenario-source.ts';
import type { RootSeed } from '../check/seeds.ts';
import type { Versions } from '../check/versions.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { ReportFigures } from './aggregate.ts';

/** report.json of one scenario: where the numbers came from, then the numbers. */
export interface ScenarioReport {
  format: 'leasehold-scenario-report/1';
  scenario: {
    name: string;
    description: string;
    source: string;
    /** The scenario file, or null for a catalogue scenario. */
    file: string | null;
    spec: ScenarioSpec;
    /** The queue configuration in force: the scenario's settings over the defaults. */
    queueConfig: QueueConfig;
  };
  seeds: {
    root: string;
    rootSource: RootSeed['source'];
    derivation: string;
    /** The seeds run, in index order. */
    list: string[];
  };
  git: { commit: string | null; dirty: boolean };
  versions: Versions;
  /** The command that produced the numbers again (the report command, or the check it came from). */
  command: string;
  /** The replay line of each failing seed, by seed. */
  replays: Record<string, string>;
  figures: ReportFigures;
}

export const SEED_DERIVATION = 'seed i = first 48 bits of sha256(["leasehold-check/1", root, scenario, i]), in decimal (sim/check/seeds.ts)';

export interface ReportProvenance {
  source: ScenarioSource;
  root: RootSeed;
  git: GitState;
  versions: Versions;
  command: string;
}

export function scenarioReport(provenance: ReportProvenance, figures: ReportFigures): ScenarioReport {
  const { source, root, git } = provenance;
  const scenarioArgument = source.file ?? source.name;
  const replays: Record<string, string> = {};
  for (const row of figures.seeds) if (row.verdict !== 'pass') replays[row.seed] = replaySeedCommand(scenarioArgument, row.seed);
  return {
    format: 'leasehold-scenario-report/1',
    scenario: {
      name: source.name,
      description: source.spec.description,
      source: source.spec.source,
      file: source.file ?? null,
      spec: source.spec,
      queueConfig: resolveConfig(source.spec.queue),
    },
    seeds: { root: root.seed, rootSource: root.source, derivation: SEED_DERIVATION, list: figures.seeds.map((row) => row.seed) },
    git: { commit: git.commit ?? null, dirty: git.dirty },
    versions: provenance.versions,
    command: provenance.command,
    replays,
    figures,
  };
}
