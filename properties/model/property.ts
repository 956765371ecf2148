/**
 * The model-based property of the core API, and how a failure of it is replayed. Each run opens a
 * fresh ':memory:' queue with a hand clock, runs the generated commands against it and the reference
 * model together (fc.asyncModelRun), and closes it.
 */
import fc from 'fast-check';
import { BROAD_MIX, queueCommands, type CommandMix } from './mixes.ts';
import type { QueueCommand } from './steps.ts';
import { expectSameViews } from './observe.ts';
import { openPair, type QueueWrapper } from './universe.ts';

export interface QueueModelConstraints {
  /** Wraps the real queue, e.g. in a deliberately broken proxy that the property must catch. */
  wrap?: QueueWrapper;
  /** Which commands, how often (default: all of them). */
  mix?: CommandMix;
  maxCommands?: number;
  /** fast-check's commands replay hint, printed as /*replayPath="..."*\/ in a counterexample. */
  replayPath?: string;
}

export function queueModelProperty(constraints: QueueModelConstraints = {}): fc.IAsyncProperty<[Iterable<QueueCommand>]> {
  const { wrap, mix = BROAD_MIX, maxCommands = 80, replayPath } = constraints;
  const commands = fc.commands(queueCommands(mix), { maxCommands, size: 'max', ...(replayPath === undefined ? {} : { replayPath }) });
  return fc.asyncProperty(commands, async (cmds) => {
    const pair = openPair(wrap);
    try {
      await fc.asyncModelRun(() => pair, cmds);
      await expectSameViews(pair.model, pair.real);
    } finally {
      await pair.close();
    }
  });
}

/** Replay settings from the environment: LEASEHOLD_RUNS, LEASEHOLD_SEED, LEASEHOLD_PATH, LEASEHOLD_REPLAY_PATH. */
export function replaySettings(env: NodeJS.ProcessEnv = process.env, defaultRuns = 200) {
  const runs = env.LEASEHOLD_RUNS === undefined ? defaultRuns : Number(env.LEASEHOLD_RUNS);
  if (!Number.isSafeInteger(runs) || runs < 1) throw new Error(`LEASEHOLD_RUNS must be a positive integer, got ${env.LEASEHOLD_RUNS}`);
  const seed = env.LEASEHOLD_SEED === undefined ? undefined : Number(env.LEASEHOLD_SEED);
  if (seed !== undefined && !Number.isSafeInteger(seed)) throw new Error(`LEASEHOLD_SEED must be an integer, got ${env.LEASEHOLD_SEED}`);
  return { runs, seed, path: env.LEASEHOLD_PATH || undefined, replayPath: env.LEASEHOLD_REPLAY_PATH || undefined };
}

/**
 * A fast-check plugin that puts the one command replaying a failure at the top of fast-check's own
 * report (which already names the seed, the path and the shrunk commands).
 */
export function replayHint(testFile: string, testName: string): fc.Plugin<[Iterable<QueueCommand>]> {
  return () => ({
    onAllRunsComplete: (details) => {
      if (!details.failed) return;
      const report = fc.defaultReportMessage(details) ?? '';
      const replayPath = /replayPath="([^"]*)"/.exec(report)?.[1];
      const env = [
        `LEASEHOLD_SEED=${details.seed}`,
        `LEASEHOLD_PATH='${details.counterexamplePath ?? ''}'`,
        ...(replayPath === undefined ? [] : [`LEASEHOLD_REPLAY_PATH='${replayPath}'`]),
      ].join(' ');
      const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
      throw new Error(`Replay this failure with:\n  ${env} npx vitest run ${testFile} -t '${testName}'\n\n${report}\n\nFailure of the shrunk run:\n${cause}`, {
        cause: details.errorInstance,
      });
    },
  });
}
