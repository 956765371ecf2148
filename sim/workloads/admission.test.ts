import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../random.ts';
import { parseScenarioFile } from '../scenario-schema.ts';
import { drawArrivals, type Arrival } from '../workload.ts';

/** A1, A2 in the workload: what tasks need of the queue's named budgets, and which are critical work. */

const BUDGETS = { browser_sessions: { kind: 'concurrency', limit: 2 }, tokens: { kind: 'rate', capacity: 1000, refill: 1000, periodMs: 60_000, meter: 'tokens' } };

function parse(workload: unknown[], queue: unknown = { budgets: BUDGETS }) {
  return parseScenarioFile({ name: 'needs-test', description: 'd', source: 'seed 004', queue, workload });
}

function spec(workload: unknown[]) {
  const parsed = parse(workload);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.spec;
}

const strip = ({ request: { needs: _needs, critical: _critical, ...request }, ...rest }: Arrival) => ({ ...rest, request });

describe('needs and critical work in the workload', () => {
  it('passes a part\'s needs and critical flag to every enqueue it makes, and nothing when absent', () => {
    const workload = spec([
      { kind: 'tasks', defaults: { tenant: 'acme', priority: 5, needs: { browser_sessions: 1 } }, tasks: [{ topic: 'a' }, { topic: 'b', critical: true, needs: { tokens: 300 }, resendAtMs: [10] }, { topic: 'c', needs: {} }] },
      { kind: 'flood', tenant: 'globex', everyMs: 1_000, untilMs: 2_000, needs: { tokens: 100 }, critical: true },
    ]).workload;
    const arrivals = drawArrivals(new SeededRandom('1').fork('workload'), workload);
    const byTopic = (topic: string) => arrivals.filter((arrival) => arrival.request.topic === topic).map((arrival) => [arrival.request.needs, arrival.request.critical]);
    expect(byTopic('a')).toEqual([[{ browser_sessions: 1 }, undefined]]);
    expect(byTopic('b')).toEqual([
      [{ tokens: 300 }, true],
      [{ tokens: 300 }, true],
    ]);
    expect(byTopic('c')).toEqual([[undefined, undefined]]);
    expect(byTopic('globex-1')).toEqual([[{ tokens: 100 }, true]]);
  });

  it('gives drawn tasks the part\'s needs and draws critical work from a stream of its own: every other draw of a seed stays as it was', () => {
    for (const seed of ['1', '2', '3']) {
      const base = drawArrivals(new SeededRandom(seed).fork('workload'), spec([{ kind: 'topics', count: 40 }]).workload);
      const admitted = drawArrivals(new SeededRandom(seed).fork('workload'), spec([{ kind: 'topics', count: 40, needs: { browser_sessions: 1 }, criticalProbability: 0.5 }]).workload);
      expect(admitted.map(strip)).toEqual(base);
      expect(admitted.every((arrival) => arrival.request.needs?.browser_sessions === 1)).toBe(true);
      const critical = admitted.filter((arrival) => arrival.request.critical === true).length;
      expect(critical).toBeGreaterThan(5);
      expect(critical).toBeLessThan(admitted.length - 5);
    }
    const rounds = spec([{ kind: 'rounds', count: 2, everyMs: 1_000, needs: { tokens: 10 } }]).workload;
    expect(drawArrivals(new SeededRandom('1').fork('workload'), rounds).map((arrival) => arrival.request.needs)).toEqual(Array(6).fill({ tokens: 10 }));
  });

  it('refuses a need that names no budget of the queue, and a need that is not a whole number', () => {
    const unknown = parse([{ kind: 'topics', needs: { gpus: 1 } }]);
    expect(unknown.ok ? [] : unknown.problems).toEqual([{ field: 'workload[0].needs.gpus', problem: 'names no budget of the queue: queue.budgets declares browser_sessions, tokens' }]);
    const none = parse([{ kind: 'flood', tenant: 'acme', everyMs: 1_000, untilMs: 2_000, needs: { gpus: 1 } }], {});
    expect(none.ok ? [] : none.problems).toEqual([{ field: 'workload[0].needs.gpus', problem: 'names no budget of the queue: the queue declares no budgets (queue.budgets)' }]);
    const fractional = parse([{ kind: 'tasks', tasks: [{ tenant: 'acme', topic: 't', priority: 1, needs: { tokens: 1.5 } }] }]);
    expect(fractional.ok).toBe(false);
  });
});
