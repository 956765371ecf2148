import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { EXIT_OK } from '../exit-codes.ts';
import { UsageError } from '../usage-error.ts';
import { OPS_COMMANDS, type OpsCommandName } from './ops-specs.ts';

/**
 * O1, O2: the operator's commands over a live queue (`leasehold status|tasks|task|dead-letters|cancel|
 * confirm-stopped|pause|resume|redrive|serve --db FILE|URL`). Everything they read and do is in src/ops
 * (shared with the dashboard); this module parses, opens the queue, prints for people (tables fitted
 * to the terminal, colour unless NO_COLOR) or as JSON, and maps every refusal to its exit code with one
 * line saying why, never a stack. The queue is imported when the command runs, as `work` does.
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const name = args.command as OpsCommandName;
  const spec = OPS_COMMANDS[name];
  const example = `leasehold ${spec.example}`;
  const db = args.string('db') as string;
  const schema = args.string('schema');
  if (schema !== undefined && !/^postgres(ql)?:\/\//i.test(db)) throw new UsageError('--schema is for a postgres:// database only', example);
  if (spec.positional !== undefined && args.positionals.length === 0) throw new UsageError(`${name} needs ${spec.positional.name}`, example);
  const json = name === 'serve' ? false : args.boolean('json');
  const [{ SystemClock }, ops] = await Promise.all([import('../../../src/adapters/clock.ts'), loadOps()]);
  const style = ops.terminalStyle(process.stdout, process.env);
  let queue: Awaited<ReturnType<typeof ops.openOpsQueue>> | undefined;
  try {
    // What confirm-stopped and redrive do depends on the workers' configuration, which the queue does not
    // store: they (and a dashboard that may run them) are refused, before anything is opened, unless it is named.
    const settings = ops.readOpsSettings(args.string('config'), args.boolean('default-config'));
    const acts = name === 'serve' ? args.boolean('allow-actions') : (ops.CONFIG_DEPENDENT_ACTIONS as readonly string[]).includes(name);
    if (acts && settings === undefined) throw ops.settingsRequired(name === 'serve' ? 'serve --allow-actions' : name);
    queue = await ops.openOpsQueue(db, new SystemClock(), schema, settings?.config);
    if (name === 'serve') return await serve(args, context, queue, db, ops, settings);
    const print = (data: unknown, text: () => string) => context.out(json ? JSON.stringify(data, null, 2) : text());
    const [first] = args.positionals;
    switch (name) {
      case 'status': {
        const view = await ops.readStatus(queue, ops.describeDb(db));
        // Its alerts and budget levels are judged by the configuration's limits: which one is said.
        const configuration = settings?.source ?? 'defaults';
        print({ ...view, configuration }, () => `${ops.formatStatus(view, style)}\n\nAlerts and budgets judged by the queue configuration: ${settings === undefined ? 'the defaults (no --config)' : configuration}`);
        return EXIT_OK;
      }
      case 'tasks': {
        const filter = { ...optional('tenant', args.string('tenant')), ...optional('state', args.string('state')), ...optional('topic', args.string('topic')), ...optionalNumber('limit', args.integer('limit')) };
        const listing = await ops.readTasks(queue, filter);
        print(listing, () => ops.formatTasks(listing, style));
        return EXIT_OK;
      }
      case 'task': {
        const detail = await ops.readTask(queue, first);
        print(detail, () => ops.formatTask(detail, style));
        return EXIT_OK;
      }
      case 'dead-letters': {
        const letters = await queue.deadLetters();
        print({ deadLetters: letters }, () => ops.formatDeadLetters(letters, style));
        return EXIT_OK;
      }
      default: {
        const request =
          name === 'confirm-stopped'
            ? { action: name, taskId: first, generation: args.integer('generation') }
            : name === 'pause'
              ? { action: name, tenant: first, reason: args.string('reason') }
              : name === 'resume'
                ? { action: name, tenant: first }
                : { action: name, taskId: first };
        const done = await ops.runAction(queue, request as Parameters<typeof ops.runAction>[1], 'operator (cli)');
        // Which configuration decided it, said where it mattered.
        const decided = acts && settings !== undefined ? { ...done, configuration: settings.source } : done;
        print(decided, () => (acts && settings !== undefined ? `${done.message} (queue configuration: ${settings.source})` : done.message));
        return EXIT_OK;
      }
    }
  } catch (error) {
    const known = ops.opsErrorOf(error, ops.describeDb(db));
    if (!(known instanceof ops.OpsError) || known.code === 'forbidden') throw error;
    if (json) context.out(JSON.stringify(known.toJSON(), null, 2));
    else context.err(`leasehold ${name}: ${known.code.replace('_', ' ')}: ${known.message}`);
    return ops.OPS_EXIT[known.code];
  } finally {
    await queue?.close();
  }
}

async function loadOps() {
  const [errors, open, model, actions, table, text, server, configFile] = await Promise.all([
    import('../../../src/ops/errors.ts'),
    import('../../../src/ops/open.ts'),
    import('../../../src/ops/model.ts'),
    import('../../../src/ops/actions.ts'),
    import('../../../src/ops/table.ts'),
    import('../../../src/ops/text.ts'),
    import('../../../src/ops/server.ts'),
    import('../../../src/ops/config-file.ts'),
  ]);
  return { ...errors, ...open, ...model, ...actions, ...table, ...text, ...server, ...configFile };
}

function optional(name: string, value: string | undefined): Record<string, string> {
  return value === undefined ? {} : { [name]: value };
}

function optionalNumber(name: string, value: number | undefined): Record<string, number> {
  return value === undefined ? {} : { [name]: value };
}

/** `serve`: the dashboard until SIGINT or SIGTERM; the token is printed once, here, and nowhere else. */
async function serve(
  args: ParsedArgs,
  context: CommandContext,
  queue: import('../../../src/queue/types.ts').WorkQueue,
  db: string,
  ops: Awaited<ReturnType<typeof loadOps>>,
  settings: import('../../../src/ops/config-file.ts').OpsSettings | undefined,
): Promise<number> {
  const [{ randomToken }, { liveTimelineSvg }] = await Promise.all([import('../../../src/adapters/token.ts'), import('../../report/live-timeline.ts')]);
  const host = args.string('host') ?? '127.0.0.1';
  const token = randomToken();
  const allowActions = args.boolean('allow-actions');
  const running = await ops.startOpsServer({
    queue,
    db: ops.describeDb(db),
    configuration: settings?.source ?? 'defaults',
    host,
    port: args.integer('port') ?? 8080,
    allowActions,
    token,
    timeline: liveTimelineSvg,
    ...(args.integer('refresh-ms') === undefined ? {} : { refreshMs: args.integer('refresh-ms') }),
  }).catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`cannot listen on ${host}:${args.integer('port') ?? 8080}: ${error.code ?? error.message}`, 'leasehold serve --db queue.sqlite --port 0');
  });
  context.out(`Leasehold dashboard for ${ops.describeDb(db)}: ${running.url}`);
  if (!['127.0.0.1', 'localhost', '::1'].includes(host)) context.err(`leasehold serve: listening on ${host}: anyone who can reach it can read the queue`);
  context.out(`Queue configuration: ${settings === undefined ? 'the defaults (no --config)' : settings.source === 'defaults' ? 'the defaults (--default-config)' : settings.source}`);
  if (allowActions) context.out(`Actions allowed with the token ${token}\nOpen ${running.url}#token=${token} (the token stays in that browser tab)`);
  else context.out('Read-only: start with --allow-actions to cancel, confirm, pause, resume and redrive from the page');
  context.out('Ctrl-C stops it.');
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await running.close();
  return EXIT_OK;
}
