import { InputError } from '../../src/queue/errors.ts';
import { ScenarioFileError } from '../check/scenario-file.ts';
import { UsageError } from './usage-error.ts';

/**
 * What a command front does with an error of leasehold/testing's functions: an option it refused
 * (InputError, ScenarioFileError) or an agent module that does not load (AgentModuleError, recognised by
 * its code so the CLI does not load src/worker/agent.ts for it) is bad usage, exit 64 with a hint;
 * anything else is rethrown as it is (a crash, exit 3).
 */
export function asUsageError(error: unknown, hint: string): unknown {
  if (error instanceof ScenarioFileError) return new UsageError(`bad scenario ${error.message}`, hint);
  if (error instanceof InputError) return new UsageError(error.message, hint);
  if (error instanceof Error && (error as { code?: unknown }).code === 'invalid_agent_module') return new UsageError(error.message, hint);
  return error;
}
