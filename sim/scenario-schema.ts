import { z } from 'zod';
import { resolveConfig } from '../src/queue/config.ts';
import { FATAL_ERROR_CLASSES, RETRYABLE_ERROR_CLASSES } from '../src/queue/types.ts';
import type { QueueConfig } from '../src/queue/types.ts';
import { closestMatch } from './cli/suggest.ts';
import { EXPECTATION_KINDS, expectationSchema } from './expectations/index.ts';
import { FAULT_SOURCES, planProblems, timedFaultProblems } from './faults/index.ts';
import { faultPlanSchema, type FaultPlan } from './faults/plan.ts';
import { perRoundProblems, perRoundSchema } from './faults/rounds.ts';
import { SWARM_KINDS, swarmSpecSchema, type SwarmKind } from './faults/swarm.ts';
import type { ExplicitTask, FloodSpec, ScenarioSpec, WorkloadSpec } from './scenario.ts';

export { faultPlanSchema, planProblems };

/**
 * The scenario file format (issue #6), as a zod schema: one JSON object per scenario, holding a
 * ScenarioSpec plus two fields for people (`$schema`, `notes`). Every object is strict, so a typo is
 * refused instead of silently ignored, and every field carries the words of what it expects, so an
 * error reads `workload.tasks[2].priority: expected an integer from 0 to 30, got 31`. The checks that
 * span fields (queue configuration, worker indexes, a per-round fault needs a rounds workload, ...)
 * run once the shape is right. `leasehold scenarios --schema` prints it as a JSON Schema.
 */

// ---------------------------------------------------------------- building blocks

/** An integer in [min, max] (max optional), with one message for every way it can be wrong. */
function int(min: number, max?: number) {
  const expected = max === undefined ? (min === Number.MIN_SAFE_INTEGER ? 'expected an integer' : `expected an integer >= ${min}`) : `expected an integer from ${min} to ${max}`;
  const base = z.number({ error: expected }).int({ error: expected }).min(min, { error: expected });
  return max === undefined ? base : base.max(max, { error: expected });
}

const probability = () => z.number({ error: 'expected a probability from 0 to 1' }).min(0, { error: 'expected a probability from 0 to 1' }).max(1, { error: 'expected a probability from 0 to 1' });

const text = () => z.string({ error: 'expected a non-empty string' }).min(1, { error: 'expected a non-empty string' });

/** A [min, max] pair of integers, as the workload draws them: both inclusive, min <= max. */
function range(min: number, max?: number) {
  const bounds = max === undefined ? `>= ${min}` : `from ${min} to ${max}`;
  return z
    .tuple([int(min, max), int(min, max)], { error: `expected [min, max], two integers ${bounds}` })
    .superRefine(([low, high], context) => {
      if (low > high) context.addIssue({ code: 'custom', message: `min ${low} is above max ${high}` });
    })
    .meta({ description: `[min, max], integers ${bounds}, min <= max` });
}

/** A strict object: an unknown field is refused (the message names the known ones and the closest). */
function strict<Shape extends z.ZodRawShape>(shape: Shape, description?: string) {
  const schema = z.strictObject(shape);
  return description === undefined ? schema : schema.meta({ description });
}

function list<T extends z.ZodType>(item: T, minLength = 0) {
  const expected = minLength === 0 ? 'expected an array' : `expected an array of at least ${minLength} item${minLength === 1 ? '' : 's'}`;
  return z.array(item, { error: expected }).min(minLength, { error: expected });
}

function oneOf<const T extends readonly [string, ...string[]]>(values: T, what?: string) {
  const expected = `expected ${what === undefined ? '' : `${what}, `}one of ${values.map((value) => JSON.stringify(value)).join(', ')}`;
  return z.enum(values, { error: expected });
}

// ---------------------------------------------------------------- the queue

const positive = () => int(1);
const nonNegative = () => int(0);

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
} satisfies Record<keyof QueueConfig, z.ZodType>;

const queueSchema = strict(
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

// ---------------------------------------------------------------- the workload

const TIERS = ['standard', 'long'] as const;

const scriptSchema = strict(
  {
    steps: list(
      strict({
        calls: list(strict({ tool: text(), args: z.unknown() })),
        inputTokens: nonNegative(),
        outputTokens: nonNegative(),
      }),
    ),
    answer: strict({ status: text(), summary: z.string({ error: 'expected a string' }) }),
    finalTokens: strict({ inputTokens: nonNegative(), outputTokens: nonNegative() }),
    poison: z.boolean({ error: 'expected true or false' }).optional(),
  },
  'What the model decides at each step: tool calls and token usage, then the final answer.',
);

const contextSchema = strict(
  {
    brand: text().optional(),
    service: text().optional(),
    stage: text().optional(),
    errorCode: text().optional(),
    deployVersion: text().optional(),
    campaign: text().optional(),
  },
  'Verified context for incident grouping (Q17).',
);

const priority = () => int(0, 30);

const explicitTaskSchema = strict(
  {
    atMs: nonNegative().meta({ description: 'Arrival, in ms from the start of the run.' }),
    tenant: text(),
    topic: text(),
    version: positive().optional(),
    priority: priority(),
    tier: oneOf(TIERS).optional(),
    label: text().optional().meta({ description: "The name expectations and reports use for this task, e.g. 'H1'; default: the topic." }),
    script: scriptSchema.optional(),
    poison: z.boolean({ error: 'expected true or false' }).optional(),
    deadlineAfterMs: nonNegative().optional(),
    resendAtMs: list(nonNegative()).optional(),
    conflictAtMs: list(nonNegative()).optional(),
    cancelAtMs: nonNegative().optional(),
    context: contextSchema.optional(),
  },
  'One task of an explicit workload.',
).superRefine((task, context) => {
  task.resendAtMs?.forEach((atMs, index) => {
    if (atMs < task.atMs) context.addIssue({ code: 'custom', path: ['resendAtMs', index], message: `a resend at ${atMs} ms comes before the task arrives (atMs ${task.atMs})` });
  });
  if (task.cancelAtMs !== undefined && task.cancelAtMs < task.atMs) {
    context.addIssue({ code: 'custom', path: ['cancelAtMs'], message: `a cancel at ${task.cancelAtMs} ms comes before the task arrives (atMs ${task.atMs})` });
  }
  task.conflictAtMs?.forEach((atMs, index) => {
    if (atMs < task.atMs) context.addIssue({ code: 'custom', path: ['conflictAtMs', index], message: `a conflicting resend at ${atMs} ms comes before the task arrives (atMs ${task.atMs})` });
  });
});

const floodSchema = strict(
  {
    tenant: text(),
    topicPrefix: text(),
    priority: range(0, 30),
    everyMs: positive(),
    fromMs: nonNegative(),
    untilMs: nonNegative(),
    count: positive().optional(),
  },
  '`count` tasks arrive every `everyMs` from `fromMs` until `untilMs` (exclusive), each on its own topic.',
).superRefine((flood, context) => {
  if (flood.untilMs <= flood.fromMs) context.addIssue({ code: 'custom', path: ['untilMs'], message: `must be after fromMs (${flood.fromMs}), got ${flood.untilMs}` });
});

const roundsSchema = strict({ count: positive(), everyMs: positive(), tasksPerRound: positive() }, 'Tasks arrive in rounds: tasksPerRound tasks together every everyMs.');

const workloadSchema = strict({
  tenants: list(text(), 1),
  topics: nonNegative(),
  newVersionProbability: probability(),
  priorities: range(0, 30),
  arrivalWindowMs: nonNegative(),
  writeProbability: probability(),
  steps: range(1),
  callsPerStep: range(0),
  tokensPerCall: range(0),
  tiers: list(oneOf(TIERS), 1),
  poisonProbability: probability().optional(),
  script: scriptSchema.optional(),
  rounds: roundsSchema.optional(),
  poisonTasks: nonNegative().optional(),
  tasks: list(explicitTaskSchema).optional(),
  floods: list(floodSchema).optional(),
}).superRefine((workload, context) => {
  if (workload.poisonTasks !== undefined) {
    if (workload.rounds === undefined) context.addIssue({ code: 'custom', path: ['poisonTasks'], message: 'needs a rounds workload (workload.rounds)' });
    else if (workload.poisonTasks > workload.rounds.count * workload.rounds.tasksPerRound) {
      context.addIssue({ code: 'custom', path: ['poisonTasks'], message: `exceeds the ${workload.rounds.count * workload.rounds.tasksPerRound} tasks of the rounds` });
    }
  }
  if (workload.topics === 0 && workload.rounds === undefined && (workload.tasks ?? []).length === 0 && (workload.floods ?? []).length === 0) {
    context.addIssue({ code: 'custom', message: 'has no tasks: give topics above 0, rounds, tasks or floods' });
  }
});

// ---------------------------------------------------------------- faults

const ERROR_CLASSES = [...RETRYABLE_ERROR_CLASSES, ...FATAL_ERROR_CLASSES] as [string, ...string[]];

const faultsSchema = strict(
  { plan: faultPlanSchema.optional(), swarm: swarmSpecSchema.optional(), perRound: perRoundSchema.optional() },
  'Exactly one of: plan (explicit faults), swarm (drawn per seed), perRound (one fault per round, drawn per seed).',
)
  .meta({ minProperties: 1, maxProperties: 1 })
  .check(
    z.superRefine(
      (faults, context) => {
        // Checked whatever else is wrong inside, and reported first: with two sources given, the
        // problems inside either are beside the point.
        const given = FAULT_SOURCES.filter((source) => faults[source] !== undefined);
        if (given.length !== 1) {
          const got = given.length === 0 ? 'none' : given.join(' and ');
          context.addIssue({ code: 'custom', params: { first: true }, message: `needs exactly one of plan (explicit faults), swarm (drawn per seed) or perRound (one fault per round), got ${got}` });
        }
      },
      { when: (payload) => typeof payload.value === 'object' && payload.value !== null },
    ),
  );

// ---------------------------------------------------------------- the scenario

const SCENARIO_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

const scenarioObject = strict({
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
  queue: queueSchema,
  workers: strict({ count: positive(), slots: positive(), idleWaitMs: nonNegative(), maxSteps: positive(), toolTimeoutMs: positive() }),
  workload: workloadSchema,
  model: strict({ latencyMs: range(0) }),
  tools: strict({
    latencyMs: range(0),
    errorClasses: strict(
      Object.fromEntries(ERROR_CLASSES.map((errorClass) => [errorClass, z.number({ error: 'expected a weight >= 0' }).min(0, { error: 'expected a weight >= 0' }).optional()])),
      'Weights of the classes injected tool errors take.',
    )
      .refine((weights) => Object.values(weights).some((weight) => ((weight as number | undefined) ?? 0) > 0), { error: 'expected at least one class with a weight above 0' })
      .optional()
      .meta({ description: 'Weights of the classes injected tool errors take, e.g. { "rate_limited": 1 }; default: 85% retryable classes, 15% permission_denied.' }),
  }),
  supervisor: strict({ scanMs: positive(), confirmDelayMs: nonNegative() }),
  faults: faultsSchema,
  phases: strict({ safetyMs: positive(), livenessMs: positive() }),
  expect: list(expectationSchema).optional().meta({ description: `What must be true of every run, checked like an invariant. Kinds: ${EXPECTATION_KINDS.map((kind) => kind.kind).join(', ')}.` }),
});

type ScenarioFileValue = z.output<typeof scenarioObject>;

/** The scenario file schema: the shape, then the checks that span fields. */
export const scenarioFileSchema = scenarioObject.check(z.superRefine((value, context) => crossCheck(value, context), { when: (payload) => payload.issues.length === 0 }));

type Context = z.core.$RefinementCtx<unknown>;

function crossCheck(value: ScenarioFileValue, context: Context): void {
  const faults = value.faults;
  if (faults.plan !== undefined) {
    (faults.plan as FaultPlan).timed.forEach((fault, index) => {
      for (const problem of timedFaultProblems(fault, value.workers.count, value.phases.safetyMs)) context.addIssue({ code: 'custom', ...problem, path: ['faults', 'plan', 'timed', index, ...problem.path] });
    });
  }
  if (faults.perRound !== undefined) {
    if (value.workload.rounds === undefined) context.addIssue({ code: 'custom', path: ['faults', 'perRound'], message: 'needs a rounds workload (workload.rounds)' });
    for (const { section, message } of perRoundProblems(faults.perRound, { modelMs: value.model.latencyMs, toolMs: value.tools.latencyMs })) {
      context.addIssue({ code: 'custom', path: [section, 'latencyMs'], message });
    }
  }
}

/** The spec a validated file holds: the fields for people dropped. */
export function toScenarioSpec(value: ScenarioFileValue): ScenarioSpec {
  const { $schema: _schema, notes: _notes, ...spec } = value;
  return spec as ScenarioSpec;
}

/**
 * Compile-time: every field of ScenarioSpec and of its parts is in the schema (a field added to the
 * type and not here fails the build here, not at the first file that uses it).
 */
type Missing<Type, Schema> = Exclude<keyof Type, keyof Schema>;
export const SCHEMA_COVERS_SCENARIO_SPEC: [
  Missing<ScenarioSpec, ScenarioFileValue>,
  Missing<WorkloadSpec, ScenarioFileValue['workload']>,
  Missing<ExplicitTask, z.output<typeof explicitTaskSchema>>,
  Missing<FloodSpec, z.output<typeof floodSchema>>,
  Exclude<SwarmKind, (typeof SWARM_KINDS)[number]>,
] extends [never, never, never, never, never]
  ? true
  : false = true;

// ---------------------------------------------------------------- errors people can read

export interface ScenarioProblem {
  /** `workload.tasks[2].priority`; empty for the whole file. */
  field: string;
  /** `expected an integer from 0 to 30, got 31`. */
  problem: string;
}

/** Validates a parsed scenario file: the spec, or every problem found (the first is the one to fix first). */
export function parseScenarioFile(value: unknown): { ok: true; spec: ScenarioSpec } | { ok: false; problems: ScenarioProblem[] } {
  const result = scenarioFileSchema.safeParse(value, { error: defaultExpectation });
  if (result.success) return { ok: true, spec: toScenarioSpec(result.data) };
  // First the problems that explain others: two fault sources given, then unknown fields (a typo of a
  // field name also makes the field it meant missing: `tenant: unknown field (did you mean tenants?)`
  // says more than `tenants: is required`). Otherwise in the order of the file's format.
  const rank = (issue: z.core.$ZodIssue) => (issue.code === 'custom' && issue.params?.first === true ? 0 : issue.code === 'unrecognized_keys' ? 1 : 2);
  return { ok: false, problems: describeIssues([...result.error.issues].sort((a, b) => rank(a) - rank(b)), value) };
}

/** Validates a fault plan as `path` (a counterexample's `plan`): the problems found, none when it is sound. */
export function parseFaultPlan(value: unknown, path: string, workerCount: number): ScenarioProblem[] {
  const result = faultPlanSchema.safeParse(value, { error: defaultExpectation });
  const prefix = path === '' ? [] : path.split('.');
  if (!result.success) return describeIssues(result.error.issues, value).map(({ field, problem }) => ({ field: joinField(prefix, field), problem }));
  return planProblems(result.data as FaultPlan, workerCount).map(({ path: inner, message }) => ({ field: formatPath([...prefix, ...inner]), problem: message }));
}

function joinField(prefix: string[], field: string): string {
  if (prefix.length === 0) return field;
  if (field === '') return prefix.join('.');
  return `${prefix.join('.')}${field.startsWith('[') ? '' : '.'}${field}`;
}

/** The JSON Schema of a scenario file (what an editor can check while someone types). */
export function scenarioJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(scenarioObject, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  return {
    $schema: schema.$schema,
    title: 'leasehold scenario',
    description:
      'A leasehold simulator scenario (sim/scenario-schema.ts). Generated by `leasehold scenarios --schema`; checks that span fields (queue configuration, worker indexes, phases) are made by the simulator, not by this schema.',
    ...Object.fromEntries(Object.entries(schema).filter(([key]) => key !== '$schema')),
  };
}

/** What an issue expected, in the file's words, when the schema did not say it itself. */
function defaultExpectation(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${article(String(issue.expected))}`;
    case 'too_small':
    case 'too_big': {
      const bound = issue.code === 'too_small' ? issue.minimum : issue.maximum;
      const word = issue.code === 'too_small' ? 'at least' : 'at most';
      if (issue.origin === 'array' || issue.origin === 'set') return `expected ${word} ${String(bound)} item${Number(bound) === 1 ? '' : 's'}`;
      if (issue.origin === 'string') return Number(bound) === 1 && issue.code === 'too_small' ? 'expected a non-empty string' : `expected ${word} ${String(bound)} characters`;
      const strictly = issue.inclusive === false ? (issue.code === 'too_small' ? '>' : '<') : issue.code === 'too_small' ? '>=' : '<=';
      return `expected a number ${strictly} ${String(bound)}`;
    }
    case 'invalid_value':
      return issue.values.length === 1 ? `expected ${JSON.stringify(issue.values[0])}` : `expected one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    case 'unrecognized_keys': {
      // A strict object from elsewhere (an expectation kind's schema): name its fields all the same.
      const shape = (issue.inst as { _zod?: { def?: { shape?: object } } } | undefined)?._zod?.def?.shape;
      if (shape === undefined) return 'unknown field';
      const known = Object.keys(shape);
      const guess = closestMatch(String(issue.keys[0]), known);
      return `unknown field${guess === undefined ? '' : ` (did you mean ${guess}?)`}; known: ${known.join(', ')}`;
    }
    case 'invalid_union': {
      const options = (issue as { options?: unknown[] }).options;
      return Array.isArray(options) ? `expected one of ${options.map((option) => JSON.stringify(option)).join(', ')}` : undefined;
    }
    default:
      return undefined;
  }
}

function article(expected: string): string {
  const words: Record<string, string> = { int: 'an integer', object: 'an object', array: 'an array', tuple: 'an array', string: 'a string', number: 'a number', boolean: 'true or false', nonoptional: 'a value' };
  return words[expected] ?? expected;
}

/** Turns zod issues into field paths and sentences, with what the file had: `expected ..., got 31`. */
function describeIssues(issues: readonly z.core.$ZodIssue[], input: unknown, prefix: readonly PropertyKey[] = []): ScenarioProblem[] {
  return issues.flatMap((issue) => describeIssue(issue, input, [...prefix, ...issue.path]));
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown, path: readonly PropertyKey[]): ScenarioProblem[] {
  const value = valueAt(input, path);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({ field: formatPath([...path, key]), problem: issue.message }));
    case 'invalid_union': {
      if (issue.errors.length === 0) {
        // A discriminated union whose discriminator matched no option: say which values it may take.
        const kind = (issue as { discriminator?: string }).discriminator;
        const isExpectation = kind === 'kind' && path.length >= 3 && path[path.length - 3] === 'expect';
        const what = isExpectation ? `unknown expectation kind ${JSON.stringify(value)}; ` : '';
        return [{ field: formatPath(path), problem: value === undefined ? `is required (${issue.message})` : isExpectation ? `${what}${issue.message}` : `${issue.message}, got ${shown(value)}` }];
      }
      // The value matched no option: when it had the wrong type for all of them, say which types would
      // do; otherwise follow the option it came closest to (whose first problem lies deepest in it).
      if (issue.errors.every((branch) => branch[0]?.code === 'invalid_type' && branch[0].path.length === 0)) {
        const message = `expected ${issue.errors.map((branch) => branch[0]!.message.replace(/^expected /, '')).join(' or ')}`;
        return [{ field: formatPath(path), problem: value === undefined ? `is required (${message})` : `${message}, got ${shown(value)}` }];
      }
      const depth = (branch: readonly z.core.$ZodIssue[]) => (branch[0] === undefined ? 0 : branch[0].path.length + (branch[0].code === 'invalid_type' ? 0 : 0.5));
      const closest = issue.errors.reduce((best, branch) => (depth(branch) > depth(best) ? branch : best));
      return describeIssues(closest, input, path);
    }
    case 'custom':
      return [{ field: formatPath(path), problem: issue.message }];
    default: {
      if (value === undefined) return [{ field: formatPath(path), problem: `is required (${issue.message})` }];
      return [{ field: formatPath(path), problem: `${issue.message}, got ${shown(value, issue.code)}` }];
    }
  }
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** `workload.tasks[2].priority` */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

function shown(value: unknown, code?: string): string {
  if (Array.isArray(value) && (code === 'too_small' || code === 'too_big')) return `${value.length} item${value.length === 1 ? '' : 's'}`;
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}
