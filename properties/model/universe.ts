/**
 * The small world the model-based test draws from: a few tenants, topics, versions, priorities and
 * workers, and a tiny queue configuration so that capacity, quotas, leases, aging and retry bounds are
 * all reached within a few dozen calls. The real queue and the reference model are built from it together.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { testStoreTarget } from '../../src/queue/__test-helpers__/test-kit.ts';
import { openWorkQueue, type QueueConfig, type WorkQueue } from '../../src/index.ts';
import { VirtualClock } from '../../sim/clock.ts';
import { ReferenceQueue, type ReferenceConfig } from './reference-queue.ts';

export const T0 = 1_700_000_000_000;

export const TENANTS = ['acme', 'bolt', 'cask'] as const;
export const TOPICS = ['t1', 't2', 't3'] as const;
export const WORKERS = ['w1', 'w2', 'w3'] as const;
/**
 * Both ends of the trusted range (Q4), gaps that aging (cap 5) bridges with room to spare (0, 3), exactly
 * (0 and 5, 5 and 10: a tie, decided by enqueue time) and never (10 and 30).
 */
export const PRIORITIES = [0, 3, 5, 10, 30] as const;
export const PAYLOADS = ['x', 'y'] as const;
/**
 * Deadlines are offsets from the start of the current second, so a request repeated within the second keeps
 * its idempotency hash (a duplicate) and one repeated later differs (a conflict). Resend repeats exactly.
 */
export const DEADLINE_WINDOW_MS = 1_000;
export const DEADLINE_OFFSETS_MS = [0, 1_000, 2_000, 4_000, 8_000] as const;
/** Clock steps around the lease (3000), the aging period (1000), heartbeat and backoff scales. */
export const CLOCK_STEPS_MS = [1, 500, 999, 1_000, 1_500, 2_999, 3_000, 5_000] as const;
/** A rare long step: past the aging cap (5 s) and the retry age (15 s). */
export const LONG_CLOCK_STEP_MS = 20_000;
export const JITTER_UNITS = [0, 0.5, 0.999] as const;

export const CONFIG = {
  capacity: 4,
  globalLimit: 2,
  perTenantLimit: 1,
  leaseMs: 3_000,
  heartbeatMs: 1_000,
  agingPeriodMs: 1_000,
  agingCap: 5,
  maxAttempts: 3,
  // Deliveries rise with attempts at every claim; equal limits keep R6 out of the way of Q16.
  maxDeliveries: 3,
  baseDelayMs: 500,
  // 500 * 2^1 = 1000 is not capped, 500 * 2^2 = 2000 is: both sides of the cap are reached before attempts run out.
  maxDelayMs: 1_500,
  // Small enough that a 20 s clock step exceeds it (Q16 retry age).
  maxRetryAgeMs: 15_000,
} satisfies Partial<QueueConfig> & ReferenceConfig;


/** A Random whose next value each command sets, so the model knows the jitter without counting draws. */
export class HandRandom {
  unit = 0.5;
  next(): number {
    return this.unit;
  }
}

export interface RealQueue {
  queue: WorkQueue;
  /** The one virtual clock (sim/clock.ts), moved by hand: no event loop runs here. */
  clock: VirtualClock;
  random: HandRandom;
  /** The calls made so far in this run, with the model's answers, for a readable failure message. */
  trace: string[];
}

/** Lets a test hand the real queue to a wrapper (a deliberately broken one, to prove the test can fail). */
export type QueueWrapper = (queue: WorkQueue) => WorkQueue;

/**
 * The reference model and a real queue on this run's store (LEASEHOLD_TEST_STORE, src/queue/__test-helpers__/test-kit.ts:
 * the model-based test runs against every store). `close()` closes the queue and removes its files.
 */
export function openPair(wrap: QueueWrapper = (queue) => queue): { model: ReferenceQueue; real: RealQueue; close: () => Promise<void> } {
  const clock = new VirtualClock(T0);
  const random = new HandRandom();
  const target = testStoreTarget();
  const queue = wrap(openWorkQueue({ db: target, clock, random, config: CONFIG }));
  const close = async () => {
    await queue.close();
    if (typeof target === 'string' && target !== ':memory:') rmSync(dirname(target), { recursive: true, force: true });
  };
  return { model: new ReferenceQueue(CONFIG, T0), real: { queue, clock, random, trace: [] }, close };
}
