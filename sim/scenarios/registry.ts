import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { readScenarioFile, ScenarioFileError } from '../check/scenario-file.ts';
import { UsageError } from '../cli/usage-error.ts';
import { PACKAGE_ROOT } from '../package-root.ts';
import type { ScenarioSpec } from '../scenario.ts';

/**
 * The built-in catalogue: every scenarios/*.json of the repository (but schema.json, the format's
 * JSON Schema), each validated by sim/scenario-schema.ts. A file dropped there is in the catalogue
 * with no code change. Read synchronously and once, on first use, from the repository root (found
 * from this module, not the working directory).
 */
export const CATALOGUE_DIR = join(PACKAGE_ROOT, 'scenarios');

export const DEFAULT_SCENARIO = 'mixed';

/** Files of the catalogue directory that are not scenarios. */
const NOT_SCENARIOS = new Set(['schema.json']);

export interface CatalogueEntry {
  name: string;
  description: string;
  /** The seed article the scenario reproduces. */
  source: string;
}

/**
 * One catalogue directory. The listing is read once; each file is read and validated once, when first
 * asked for, so naming one scenario does not depend on every other file being sound (listing does).
 */
export class Catalogue {
  private files: ReadonlySet<string> | undefined;
  private readonly specs = new Map<string, ScenarioSpec>();

  constructor(
    readonly directory: string,
    /** How the directory is named in errors. */
    readonly shownAs: string = directory,
  ) {}

  /** The scenario names, in the listed order: the default first, then by name. */
  names(): string[] {
    this.files ??= new Set(
      readdirSync(this.directory)
        .filter((file) => file.endsWith('.json') && !NOT_SCENARIOS.has(file))
        .map((file) => basename(file, '.json')),
    );
    const names = [...this.files].sort();
    if (!this.files.has(DEFAULT_SCENARIO)) throw new UsageError(`the catalogue ${this.shownAs}/ has no ${DEFAULT_SCENARIO}.json, the default scenario`, `git checkout ${this.shownAs}/${DEFAULT_SCENARIO}.json`);
    return [DEFAULT_SCENARIO, ...names.filter((name) => name !== DEFAULT_SCENARIO)];
  }

  /** Every scenario, validated; a bad file is a UsageError (exit 64) naming it, its field and what was expected. */
  all(): ScenarioSpec[] {
    return this.names().map((name) => this.find(name) as ScenarioSpec);
  }

  find(name: string): ScenarioSpec | undefined {
    const cached = this.specs.get(name);
    if (cached !== undefined) return cached;
    if (!this.names().includes(name)) return undefined;
    const spec = this.read(name);
    this.specs.set(name, spec);
    return spec;
  }

  private read(name: string): ScenarioSpec {
    const shown = `${this.shownAs}/${name}.json`;
    try {
      const spec = readScenarioFile(join(this.directory, `${name}.json`), shown);
      if (spec.name !== name) throw new ScenarioFileError('name', `must match the file name in the catalogue: expected ${JSON.stringify(name)}, got ${JSON.stringify(spec.name)}`, shown);
      for (const field of ['description', 'source'] as const) {
        if (spec[field].trim() === '') throw new ScenarioFileError(field, `is required in the catalogue (${field === 'source' ? 'the seed article it reproduces' : 'one line for leasehold scenarios'})`, shown);
      }
      return spec;
    } catch (error) {
      if (!(error instanceof ScenarioFileError)) throw error;
      throw new UsageError(`bad scenario file in the catalogue: ${error.message}`, `fix or move ${shown}, then: leasehold scenarios`);
    }
  }
}

const builtIn = new Catalogue(CATALOGUE_DIR, 'scenarios');

/** The catalogue in its listed order: the default first, then by name. */
export function listScenarios(): CatalogueEntry[] {
  return builtIn.all().map(({ name, description, source }) => ({ name, description, source }));
}

export function findScenario(name: string): ScenarioSpec | undefined {
  return builtIn.find(name);
}

/** A catalogue scenario that must exist (tests and tools that name one): throws naming the catalogue otherwise. */
export function catalogueScenario(name: string): ScenarioSpec {
  const spec = findScenario(name);
  if (spec === undefined) throw new RangeError(`no scenario '${name}' in the catalogue (${builtIn.names().join(', ')})`);
  return spec;
}
