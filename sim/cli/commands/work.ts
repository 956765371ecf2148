import { existsSync, statSync } from 'node:fs';
import { extname } from 'node:path';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { COMMANDS } from '../command-specs.ts';
import { EXIT_OK, EXIT_USAGE } from '../exit-codes.ts';
import { UsageError } from '../usage-error.ts';

/** The agent module extensions `leasehold work` accepts (src/worker/agent.ts AGENT_MODULE_EXTENSIONS; repeated so this module loads none of src/). */
const AGENT_EXTENSIONS = ['.mjs', '.js', '.cjs', '.ts', '.mts', '.cts'];

/**
 * `leasehold work --db FILE|URL --agent MODULE [--processes N] [--slots N] [--drain-ms MS] [--config FILE]` (SPEC W3):
 * starts the Supervisor, which keeps N worker processes running the agent module over the queue,
 * restarts the ones that die and confirms the tasks of those it saw exit (Q11). It prints one line per
 * event on standard output and runs until SIGTERM or SIGINT, which drain the fleet (R8): exit 0 then.
 * An agent module that never loads stops it with exit 64 and the module's error.
 *
 * The Supervisor is imported when the command runs, not with the CLI: `leasehold check` loads every
 * command module, and the simulator neither runs nor should load the production process manager.
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const example = `leasehold ${COMMANDS.work.example}`;
  const db = args.string('db') as string;
  const agent = args.string('agent') as string;
  if (db === ':memory:') throw new UsageError("--db ':memory:' is private to one process; worker processes need a SQLite file or a postgres:// URL", example);
  if (!existsSync(agent) || !statSync(agent).isFile()) throw new UsageError(`agent module not found: ${agent}`, example);
  if (!AGENT_EXTENSIONS.includes(extname(agent))) throw new UsageError(`--agent expects a module file (${AGENT_EXTENSIONS.join(', ')}), got ${agent}`, example);
  const schema = args.string('schema');
  if (schema !== undefined && !/^postgres(ql)?:\/\//.test(db)) throw new UsageError('--schema is for a postgres:// database only', example);
  const { Supervisor } = await import('../../../src/worker/supervisor.ts');
  const { LeaseholdError } = await import('../../../src/queue/errors.ts');
  // One configuration file for the fleet and for the operator commands that decide as it would
  // (confirm-stopped, redrive: their --config FILE), read and validated the same way.
  const { readOpsSettings } = await import('../../../src/ops/config-file.ts');
  const configFile = args.string('config');
  let config;
  try {
    config = configFile === undefined ? undefined : readOpsSettings(configFile, false)?.config;
  } catch (error) {
    if (error instanceof LeaseholdError) throw new UsageError(error.message, example);
    throw error;
  }
  let supervisor;
  try {
    supervisor = new Supervisor({
      db,
      agent,
      ...(config === undefined ? {} : { config }),
      processes: args.integer('processes') ?? 2,
      slots: args.integer('slots') ?? 1,
      drainMs: args.integer('drain-ms') ?? 30_000,
      ...(schema === undefined ? {} : { schema }),
      log: (line) => context.out(line),
    });
    await supervisor.start();
  } catch (error) {
    // The queue's or the supervisor's own refusal (a file that is not a queue, a TypeScript module without tsx) names what is wrong.
    if (error instanceof LeaseholdError) throw new UsageError(error.message, example);
    throw error;
  }
  const removeHandlers = supervisor.handleSignals();
  const result = await supervisor.done;
  removeHandlers();
  if (result.reason === 'agent_module_failed') {
    context.err(`leasehold: ${result.message ?? 'the agent module failed to load'}`);
    return EXIT_USAGE;
  }
  return EXIT_OK;
}
