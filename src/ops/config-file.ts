import { readFileSync, statSync } from 'node:fs';
import { resolveConfig } from '../queue/config.ts';
import { ConfigError } from '../queue/errors.ts';
import type { QueueConfig } from '../queue/types.ts';
import { OpsError } from './errors.ts';

/**
 * O1: the queue configuration the operator's commands run with. What confirm-stopped and redrive do
 * depends on the workers' configuration (maxAttempts and maxDeliveries decide whether a confirmed task
 * goes back to ready or ends failed; capacity whether a redrive is refused queue_full; budgets,
 * tokensPerCredit and fairness what an ended run releases and charges), and a queue does not store it.
 * So the operator names it: `--config FILE` (a JSON object, the same `config` the workers pass to
 * openWorkQueue or the Supervisor), or `--default-config` to run with the defaults, knowingly.
 */
export interface OpsSettings {
  /** The overrides given to openWorkQueue (empty for the defaults). */
  config: Partial<QueueConfig>;
  /** Where they came from: the file's path, or 'defaults'. */
  source: string;
}

/** The actions whose outcome depends on the workers' configuration: refused unless it is named. */
export const CONFIG_DEPENDENT_ACTIONS = ['confirm-stopped', 'redrive'] as const;

/**
 * Reads `--config FILE` (or takes the defaults for `--default-config`); undefined when neither was
 * given. A file that is missing, not JSON, or not a valid configuration (resolveConfig's ConfigError,
 * naming the field) is `invalid_input`, and nothing is opened.
 */
export function readOpsSettings(file: string | undefined, useDefaults: boolean): OpsSettings | undefined {
  if (file !== undefined && useDefaults) throw new OpsError('invalid_input', '--config FILE and --default-config exclude each other: name the workers\' configuration, or take the defaults');
  if (useDefaults) return { config: {}, source: 'defaults' };
  if (file === undefined) return undefined;
  let text: string;
  try {
    if (!statSync(file).isFile()) throw new Error('not a file');
    text = readFileSync(file, 'utf8');
  } catch {
    throw new OpsError('invalid_input', `--config: no configuration file at ${file}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new OpsError('invalid_input', `--config ${file}: not JSON (${(error as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new OpsError('invalid_input', `--config ${file}: expected a JSON object of queue settings, as the workers' openWorkQueue({ config }) takes`);
  try {
    resolveConfig(parsed as Partial<QueueConfig>);
  } catch (error) {
    if (error instanceof ConfigError) throw new OpsError('invalid_input', `--config ${file}: ${error.message}`);
    throw error;
  }
  return { config: parsed as Partial<QueueConfig>, source: file };
}

/** The refusal of a configuration-dependent action run with neither --config nor --default-config. */
export function settingsRequired(action: string): OpsError {
  return new OpsError(
    'invalid_input',
    `${action} needs the workers' queue configuration, which decides its outcome (maxAttempts and maxDeliveries: ready again or failed; capacity: queue_full) and is not stored in the queue: pass --config FILE (the JSON the workers' config holds), or --default-config if they run with the defaults. Nothing was changed`,
  );
}
