import { describe, expect, it } from 'vitest';
import { killTakeover } from './kill-takeover.ts';
import { mixed } from './mixed.ts';
import { poisonTask } from './poison-task.ts';
import { zombiePause } from './zombie-pause.ts';
import { findScenario, listScenarios } from './registry.ts';

describe('the catalogue as JSON', () => {
  it('holds exactly the ScenarioSpec values the TypeScript definitions produced', () => {
    for (const spec of [mixed, killTakeover, zombiePause, poisonTask]) {
      expect(findScenario(spec.name), spec.name).toStrictEqual(JSON.parse(JSON.stringify(spec)));
      expect(findScenario(spec.name), spec.name).toEqual(spec);
    }
    const names = listScenarios().map((entry) => entry.name);
    expect(names[0]).toBe('mixed');
    expect(names).toEqual(expect.arrayContaining(['kill-takeover', 'poison-task', 'zombie-pause']));
  });
});
