import { describe, expect, it } from 'vitest';
import { Incarnation } from '../actors/incarnation.ts';
import { EventLoop } from '../event-loop.ts';
import { History } from '../history.ts';
import { SeededRandom } from '../random.ts';
import { FaultController } from './controller.ts';
import type { FaultWorld } from './injector.ts';
import { NO_RATES, type FaultPlan, type KillPoint, type PointFault } from './plan.ts';

/**
 * A controller over a plan of point faults, in a world of `running.length` workers holding `running`
 * tasks each; every kill the faults order is recorded by its label.
 */
function controllerFor(points: PointFault[], running: number[]) {
  const loop = new EventLoop();
  const plan: FaultPlan = { timed: [], points, rates: { ...NO_RATES } };
  const killed: string[] = [];
  const world: FaultWorld = {
    loop,
    history: new History(loop),
    workerCount: running.length,
    kill: (_index, _reason, _reviveAfterMs, _atNextAwait, label) => void killed.push(label ?? '?'),
    pause: () => {},
    drain: () => {},
    isCurrent: () => true,
    runningTasks: () => running,
    deliver: () => {},
    cancel: () => {},
    deadlineOf: () => undefined,
    pauseTenant: () => {},
    resumeTenant: () => {},
    scheduler: { down: false, onDisk: false, shutDown: async () => {}, reopen: () => {}, connect: () => ({}) as never, leaseMs: 30_000 },
  };
  const controller = new FaultController(plan, world, new SeededRandom('controller'));
  const startMs = loop.now();
  controller.schedule(startMs);
  const incarnations = running.map((_, index) => new Incarnation(`w${index}#1`, index));
  /** Arrivals (ms from the start, point, worker); returns the label of the fault each one fired, or '-'. */
  const arrive = async (arrivals: [number, KillPoint, number][]) => {
    const fired: string[] = [];
    for (const [atMs, point, worker] of arrivals) {
      loop.schedule(startMs + atMs, () => {
        const before = killed.length;
        controller.atPoint(point, incarnations[worker]!, false);
        fired.push(killed.length > before ? killed[killed.length - 1]! : '-');
      });
    }
    await loop.run();
    return fired;
  };
  return { controller, arrive };
}

const kill = (fields: Partial<PointFault> & { label: string }): PointFault => ({
  kind: 'kill-at',
  point: 'before_model_call',
  occurrence: 1,
  reviveAfterMs: 1_000,
  ...fields,
} as PointFault);

describe('scoped point faults', () => {
  it('counts every arrival of every worker when unscoped, as the plain kill-at always has', async () => {
    const { arrive } = controllerFor([kill({ occurrence: 3, label: 'third' })], [0, 0]);
    const fired = await arrive([[0, 'before_model_call', 0], [1, 'before_tool_call', 1], [2, 'before_model_call', 1], [3, 'before_model_call', 0], [4, 'before_model_call', 0]]);
    expect(fired).toEqual(['-', '-', '-', 'third', '-']);
  });

  it('counts only the busiest worker, ties included, never an idle one', async () => {
    const busiest = controllerFor([kill({ occurrence: 2, target: 'busiest', label: 'busiest' })], [3, 1]);
    expect(await busiest.arrive([[0, 'before_model_call', 1], [1, 'before_model_call', 0], [2, 'before_model_call', 1], [3, 'before_model_call', 0]])).toEqual([
      '-',
      '-',
      '-',
      'busiest',
    ]);
    const idle = controllerFor([kill({ target: 'busiest', label: 'idle' })], [0, 0]);
    expect(await idle.arrive([[0, 'before_model_call', 0]])).toEqual(['-']);
    const tie = controllerFor([kill({ occurrence: 2, target: 'busiest', label: 'tie' })], [2, 2]);
    expect(await tie.arrive([[0, 'before_model_call', 0], [1, 'before_model_call', 1]])).toEqual(['-', 'tie']);
  });

  it('counts only inside its window, so each round has its own fault', async () => {
    const { arrive } = controllerFor(
      [kill({ fromMs: 1_000, toMs: 2_000, label: 'round 2' }), kill({ fromMs: 0, toMs: 1_000, occurrence: 2, label: 'round 1' })],
      [1, 0],
    );
    expect(await arrive([[0, 'before_model_call', 0], [999, 'before_model_call', 0], [1_000, 'before_model_call', 0], [2_000, 'before_model_call', 0]])).toEqual([
      '-',
      'round 1',
      'round 2',
      '-',
    ]);
  });

  it('fires nothing once the safety phase ended', async () => {
    const { controller, arrive } = controllerFor([kill({ label: 'never' })], [1]);
    controller.stop();
    expect(await arrive([[5, 'before_model_call', 0]])).toEqual(['-']);
  });
});
