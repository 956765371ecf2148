import { z } from 'zod';
import { resolveConfig } from '../src/queue/config.ts';
import { FATAL_ERROR_CLASSES, RETRYABLE_ERROR_CLASSES } from '../src/queue/types.ts';
import type { QueueConfig } from '../src/queue/types.ts';
import { EXPECTATION_KINDS, expectationSchema } from './expectations/index.ts';
import { list, nonNegative, oneOf, positive, probability, range, strict, withDefaults } from './schema-kit.ts';
import { graphDrawingPartSchema } from './workloads/graph-draw.ts';
import { scriptSchema } from './workloads/script.ts';

/**
 * The sections of a scenario besides its workload and faults: the queue, the worker pool, the model,
 * the tools, the supervisor, the phases, the expectations. Both forms of a file use them: the parts
 * form with the defaults below (a file states only what differs), the explicit form with every field.
 */

/** The name, the lines for people, and the expectations: the same in both forms. */
const SCENARIO_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

export const headerFields = {
  $schema: z.string({ error: 'expected a string' }).optional().meta({ description: 'For editors: the JSON Schema of this format (scenarios/schema.json).' }),
  name: z
    .string({ error: 'expected a non-empty string' })
    .regex(SCENARIO_NAME, { error: "expected letters, digits, '-', '_' or '.', starting with a letter or digit" })
    .meta({ description: 'The scenario name, as --scenario and reports use it.' }),
  description: z.string({ error: 'expected a string' }).default('').meta({ description: 'One line for `leasehold scenarios`.' }),
  source: z.string({ error: 'expected a string' }).default('').meta({ description: 'The seed article this scenario reproduces, e.g. "seed 002 (...)".' }),
  notes: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .meta({ description: 'For people reading the file; ignored by the simulator.' }),
};

export const expectField = list(expectationSchema)
  .optional()
  .meta({ description: `What must be true of every run, checked like an invariant. Kinds: ${EXPECTATION_KINDS.map((kind) => kind.kind).join(', ')}.` });

// ---------------------------------------------------------------- the queue

/** Every QueueConfig field, optional; resolveConfig then checks how they fit together (Q6, Q9, ...). */
const queueFields = {
  capacity: positive(),
  globalLimit: positive(),
  perTenantLimit: positive(),
  tenantLimits: z.record(z.string(), nonNegative(), { error: 'expected an object of tenant: limit' }),
  leaseMs: positive(),
  heartbeatMs: positive(),
  agingPeriodMs: positive(),
  agingCap: nonNegative(),
  maxAttempts: positive(),
  maxDeliveries: positive(),
  baseDelayMs: positive(),
  maxDelayMs: positive(),
  maxRetryAgeMs: positive(),
  maxInputBytes: positive(),
  incidentBucketMs: positive(),
  tierHolds: strict({ standard: nonNegative().optional(), long: nonNegative().optional() }),
  tokensPerCredit: positive(),
  holdTtlMs: positive(),
  reconciliation: oneOf(['hold', 'auto']),
  graceMs: nonNegative(),
  busyTimeoutMs: nonNegative(),
  busyRetries: nonNegative(),
  // A1: the kinds' fields are checked by resolveConfig (queue/budgets.ts validateBudgets), which names the field.
  budgets: z.record(z.string(), z.record(z.string(), z.unknown(), { error: 'expected { kind, ... }' }), { error: 'expected an object of budget name: { kind, ... }' }),
  criticalHeadroom: nonNegative(),
  sessionPolicy: oneOf(['serial', 'cancel_in_progress', 'versioned']),
  fairness: oneOf(['priority', 'fair_share']),
  tenantWeights: z.record(z.string(), positive(), { error: 'expected an object of tenant: weight' }),
  stuckAfterMs: positive(),
} satisfies Record<keyof QueueConfig, z.ZodType>;

/** The queue's defaults are the core's own (src/queue/config.ts DEFAULT_CONFIG): a file states overrides. */
export const queueSchema = strict(
  Object.fromEntries(Object.entries(queueFields).map(([field, schema]) => [field, schema.optional()])) as { [K in keyof typeof queueFields]: z.ZodOptional<(typeof queueFields)[K]> },
  'Overrides of the queue configuration (src/queue/config.ts DEFAULT_CONFIG); every field is optional.',
).check(
  z.superRefine(
    (queue, context) => {
      try {
        resolveConfig(queue as Partial<QueueConfig>);
      } catch (error) {
        const field = (error as { field?: unknown }).field;
        const message = (error as Error).message.replace(/^invalid config field '[^']*': /, '');
        context.addIssue({ code: 'custom', message, path: typeof field === 'string' ? field.split('.') : [] });
      }
    },
    { when: (payload) => payload.issues.length === 0 },
  ),
);

// ---------------------------------------------------------------- workers, model, tools, supervisor, phases

export const workersFields = {
  count: positive().meta({ description: 'Simulated workers; default 4.' }),
  slots: positive().meta({ description: 'Runs each worker holds at once; default 1.' }),
  idleWaitMs: positive().meta({ description: 'How long an idle worker waits before it polls again (it backs off from there), at least 1 ms (the worker runtime refuses 0); default 1000.' }),
  maxSteps: positive().meta({ description: 'Steps a run may take; default 16.' }),
  toolTimeoutMs: positive().meta({ description: 'A tool call that takes longer fails; default 20000.' }),
};
export const WORKERS_DEFAULTS = { count: 4, slots: 1, idleWaitMs: 1_000, maxSteps: 16, toolTimeoutMs: 20_000 };

const ERROR_CLASSES = [...RETRYABLE_ERROR_CLASSES, ...FATAL_ERROR_CLASSES] as [string, ...string[]];

export const toolsFields = {
  latencyMs: range(0).meta({ description: 'A call takes [min, max] ms, drawn per call; default [100, 2000].' }),
  errorClasses: strict(
    Object.fromEntries(ERROR_CLASSES.map((errorClass) => [errorClass, z.number({ error: 'expected a weight >= 0' }).min(0, { error: 'expected a weight >= 0' }).optional()])),
    'Weights of the classes injected tool errors take.',
  )
    .refine((weights) => Object.values(weights).some((weight) => ((weight as number | undefined) ?? 0) > 0), { error: 'expected at least one class with a weight above 0' })
    .optional()
    .meta({ description: 'Weights of the classes injected tool errors take, e.g. { "rate_limited": 1 }; default: 85% retryable classes, 15% permission_denied.' }),
};
export const TOOLS_DEFAULTS = { latencyMs: [100, 2_000] as [number, number] };

export const supervisorFields = {
  scanMs: positive().meta({ description: 'How often it expires leases and looks at uncertain tasks; default 5000.' }),
  confirmDelayMs: nonNegative().meta({ description: 'How long after a death the platform confirms it; default 10000.' }),
};
/** A5: the monitor that reads queue.signals() during the safety phase; each read is recorded (I22). */
export const monitorFields = {
  everyMs: positive().meta({ description: 'How often it reads queue.signals(), in ms of the safety phase.' }),
  offsetMs: nonNegative().meta({ description: 'When its first read is, after the start; default 0.' }),
};

export const SUPERVISOR_DEFAULTS = { scanMs: 5_000, confirmDelayMs: 10_000 };

export const fleetFields = {
  interleave: probability().meta({
    description:
      "The chance that an actor's transaction waits at its BEGIN while other actors' transactions run first (sim/store/fleet.ts); 0: every transaction runs the moment it is made. Default 0.25.",
  }),
  maxWaitMs: nonNegative().meta({
    description: 'The longest such wait; 0: a wait only lets what is due at the same instant run first, so the order of transactions changes and the timeline does not. Default 400.',
  }),
  noticeLoss: probability().optional().meta({
    description:
      "W1: the chance that one claimable notice (PostgreSQL's NOTIFY, SQLite's in-process wake) never reaches one watching worker; its bounded poll must find the work anyway. Default 0.1.",
  }),
  noticeDelayMaxMs: nonNegative().optional().meta({ description: 'W1: the longest a notice that arrives takes to reach a worker, in ms. Default 20.' }),
};
export { FLEET_DEFAULTS } from './store/fleet.ts';

export const phasesFields = {
  safetyMs: positive().meta({ description: 'The safety phase, with faults; default 150000.' }),
  livenessMs: positive().meta({ description: 'The liveness phase after it (faults stop, everyone recovers), within which everything must drain; default 1800000.' }),
};
export const PHASES_DEFAULTS = { safetyMs: 150_000, livenessMs: 1_800_000 };

/**
 * process_crash promises that a commit survives a process crash, nothing on power loss: a run of it
 * under a power loss would lose acknowledged writes by design, which the checkers rightly call lost.
 */
export const PROCESS_CRASH_POWER_LOSS = "durability 'process_crash' promises nothing on power loss: leave the power-loss fault out (or use acknowledged or every_commit)";

/**
 * What a commit of the SQLite store survives (src/store/durability.ts), as openWorkQueue's `durability`
 * option. Stated, every seed keeps its database in a real WAL file opened at that level (a database in
 * memory has no durability), the power-loss twin's too; absent, the world's own choice of database and,
 * under a power loss, the production default ('acknowledged'). The PostgreSQL store leaves it to the server.
 */
export const durabilityField = oneOf(['acknowledged', 'every_commit', 'process_crash'] as const, 'a durability')
  .optional()
  .meta({
    description:
      "The SQLite store's durability (openWorkQueue's durability): acknowledged, every_commit or process_crash. Stated: every seed runs on a real WAL file at that level. Absent: a database in memory where no fault needs a file, and 'acknowledged' (the production default) under a power loss. process_crash promises nothing on power loss, so it refuses a power-loss fault.",
  });

export const modelLatency = range(0).meta({ description: 'A model call takes [min, max] ms, drawn per call; default [500, 3000].' });

/**
 * The parts form's model: its latency and what it decides, one stub script for every task (seed 002's
 * stub model) or a script drawn per task from these ranges. In the runner's WorkloadSpec all but the
 * latency are `scripts`, beside the parts that draw the tasks.
 */
export const modelFields = {
  latencyMs: modelLatency,
  steps: range(1).meta({ description: 'Steps of a drawn script; default [1, 4].' }),
  callsPerStep: range(0).meta({ description: 'Read-only tool calls a step makes; default [1, 3].' }),
  tokensPerCall: range(0).meta({ description: 'Input tokens a call uses (output: a quarter); default [200, 2000].' }),
  writeProbability: probability().meta({ description: 'Probability that a drawn script makes one write effect (confirm_order, issue_refund) at a drawn step; default 0.8.' }),
  poisonProbability: probability()
    .optional()
    .meta({ description: 'Probability that a task is poison: its worker dies at its first model call, every time (R6). Absent: none is (and nothing is drawn for it).' }),
  graphs: graphDrawingPartSchema.optional(),
  script: scriptSchema.optional().meta({ description: "A stub model: every task without its own script runs this one (steps, callsPerStep, tokensPerCall, writeProbability and graphs are then not used)." }),
};
export const MODEL_DEFAULTS = { latencyMs: [500, 3_000] as [number, number], steps: [1, 4] as [number, number], callsPerStep: [1, 3] as [number, number], tokensPerCall: [200, 2_000] as [number, number], writeProbability: 0.8 };

/** A section of the parts form: every field of `defaults` optional with its default, and the section itself optional. */
export function sectionWithDefaults<Shape extends z.ZodRawShape, const Defaults extends { [K in keyof Shape]?: z.output<Shape[K]> }>(shape: Shape, defaults: Defaults, description: string) {
  return strict(withDefaults(shape, defaults), description).prefault({} as never);
}
