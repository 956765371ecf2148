/**
 * Which commands the model-based test draws, and how often: a broad mix of everything, and a mix that
 * keeps tasks alive through retries and lapses until their attempts run out.
 */
import fc from 'fast-check';
import { FATAL_ERROR_CLASSES, RETRYABLE_ERROR_CLASSES, type ErrorClass } from '../../src/index.ts';
import {
  AcknowledgeCancel,
  AdvanceClock,
  AppendEvent,
  Cancel,
  Checkpoint,
  Claim,
  Complete,
  ConfirmStopped,
  Enqueue,
  ExpireLeases,
  Fail,
  Heartbeat,
  NewVersion,
  Resend,
} from './commands.ts';
import type { Presenter, QueueCommand } from './steps.ts';
import { CLOCK_STEPS_MS, DEADLINE_OFFSETS_MS, JITTER_UNITS, LONG_CLOCK_STEP_MS, PAYLOADS, PRIORITIES, TENANTS, TOPICS, WORKERS } from './universe.ts';

const presenter: fc.Arbitrary<Presenter> = fc.oneof(
  { arbitrary: fc.constant('holder' as const), weight: 6 },
  { arbitrary: fc.constantFrom('otherWorker' as const, 'olderGeneration' as const, 'newerGeneration' as const), weight: 2 },
);
const leasePick = fc.nat({ max: 7 });

/** How often each command comes up (its arbitrary is repeated that many times), and whether deadlines are drawn. */
export interface CommandMix {
  weights: Record<'enqueue' | 'resend' | 'newVersion' | 'claim' | 'heartbeat' | 'complete' | 'fail' | 'acknowledgeCancel' | 'appendEvent' | 'checkpoint' | 'expireLeases' | 'confirmStopped' | 'cancel' | 'advanceClock', number>;
  deadlines: boolean;
  /** Whether fail() may report a non-retryable error class. */
  fatalFailures: boolean;
}

/** Everything, weighted so that leases lapse, tasks go uncertain and come back, and versions replace each other. */
export const BROAD_MIX: CommandMix = {
  weights: { enqueue: 2, resend: 1, newVersion: 1, claim: 4, heartbeat: 1, complete: 1, fail: 3, acknowledgeCancel: 1, appendEvent: 1, checkpoint: 1, expireLeases: 1, confirmStopped: 3, cancel: 1, advanceClock: 3 },
  deadlines: true,
  fatalFailures: true,
};

/**
 * Claims, retryable failures, lapses and confirmations only (no completions, deadlines, cancels or new
 * versions): tasks live long enough to be claimed maxAttempts times, so the bounds of Q11 and Q16 are
 * reached, not just approached.
 */
export const RETRY_MIX: CommandMix = {
  weights: { enqueue: 2, resend: 0, newVersion: 0, claim: 4, heartbeat: 1, complete: 0, fail: 4, acknowledgeCancel: 0, appendEvent: 0, checkpoint: 0, expireLeases: 1, confirmStopped: 2, cancel: 0, advanceClock: 3 },
  deadlines: false,
  fatalFailures: false,
};

export function queueCommands(mix: CommandMix = BROAD_MIX): fc.Arbitrary<QueueCommand>[] {
  // About one request in four carries a deadline.
  const deadlineOffset = mix.deadlines
    ? fc.option(fc.constantFrom(...DEADLINE_OFFSETS_MS), { freq: 4 }).map((offset) => (offset === null ? undefined : offset))
    : fc.constant(undefined);
  const enqueue = fc
    .tuple(
      fc.constantFrom(...TENANTS),
      fc.constantFrom(...TOPICS),
      fc.integer({ min: 1, max: 3 }),
      fc.constantFrom(...PRIORITIES),
      fc.constantFrom(...PAYLOADS),
      deadlineOffset,
    )
    .map(([tenant, topic, version, priority, payload, deadline]) => new Enqueue(tenant, topic, version, priority, payload, deadline));
  const retryable = fc.constantFrom<ErrorClass>(...RETRYABLE_ERROR_CLASSES);
  const fatal = fc.constantFrom<ErrorClass>(...FATAL_ERROR_CLASSES);
  const errorClass = mix.fatalFailures ? fc.oneof({ arbitrary: retryable, weight: 3 }, { arbitrary: fatal, weight: 1 }) : retryable;
  const lease = <T>(make: (pick: number, who: Presenter) => T) => fc.tuple(leasePick, presenter).map(([pick, who]) => make(pick, who));
  const arbitraries: Record<keyof CommandMix['weights'], fc.Arbitrary<QueueCommand>> = {
    enqueue,
    resend: fc.nat({ max: 5 }).map((pick) => new Resend(pick)),
    newVersion: fc
      .tuple(fc.nat({ max: 7 }), fc.constantFrom(...PRIORITIES), fc.constantFrom(...PAYLOADS), deadlineOffset)
      .map(([pick, priority, payload, deadline]) => new NewVersion(pick, priority, payload, deadline)),
    claim: fc.constantFrom(...WORKERS).map((worker) => new Claim(worker)),
    heartbeat: lease((pick, who) => new Heartbeat(pick, who)),
    complete: lease((pick, who) => new Complete(pick, who)),
    fail: fc
      .tuple(leasePick, presenter, errorClass, fc.constantFrom(...JITTER_UNITS))
      .map(([pick, who, errorClass, jitter]) => new Fail(pick, who, errorClass, jitter)),
    acknowledgeCancel: lease((pick, who) => new AcknowledgeCancel(pick, who)),
    appendEvent: lease((pick, who) => new AppendEvent(pick, who)),
    checkpoint: lease((pick, who) => new Checkpoint(pick, who)),
    expireLeases: fc.constant(new ExpireLeases()),
    confirmStopped: fc
      .tuple(fc.nat({ max: 7 }), fc.boolean(), fc.oneof({ arbitrary: fc.constant('supervisor' as const), weight: 5 }, { arbitrary: fc.constant('model' as const), weight: 1 }))
      .map(([pick, previous, source]) => new ConfirmStopped(pick, previous, source)),
    cancel: fc.nat({ max: 7 }).map((pick) => new Cancel(pick)),
    advanceClock: fc
      .oneof({ arbitrary: fc.constantFrom(...CLOCK_STEPS_MS), weight: 12 }, { arbitrary: fc.constant(LONG_CLOCK_STEP_MS), weight: 1 })
      .map((ms) => new AdvanceClock(ms)),
  };
  return (Object.keys(arbitraries) as (keyof CommandMix['weights'])[]).flatMap((name) => Array.from({ length: mix.weights[name] }, () => arbitraries[name]));
}
