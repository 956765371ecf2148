import { describe, expect, it } from 'vitest';
import { epochMsDefault, VirtualClock } from './clock.ts';

describe('VirtualClock', () => {
  it('starts at the epoch and stands still until advanced', () => {
    const clock = new VirtualClock();
    expect(clock.now()).toBe(epochMsDefault);
    expect(clock.now()).toBe(epochMsDefault);
    clock.advanceTo(epochMsDefault + 250);
    expect(clock.now()).toBe(epochMsDefault + 250);
  });

  it('jumps the wall reading backwards and forwards without moving the timeline', () => {
    const clock = new VirtualClock(1_000);
    clock.jump(-400);
    expect(clock.now()).toBe(600);
    expect(clock.monotonicNow()).toBe(1_000);
    clock.advanceTo(1_100);
    clock.jump(50);
    expect(clock.now()).toBe(750);
    expect(clock.skewMs).toBe(-350);
  });

  it('refuses to move the timeline backwards or to fractional instants', () => {
    const clock = new VirtualClock(1_000);
    expect(() => clock.advanceTo(999)).toThrow(RangeError);
    expect(() => clock.advanceTo(1_000.5)).toThrow(RangeError);
    expect(() => clock.jump(0.5)).toThrow(RangeError);
    expect(() => new VirtualClock(Number.NaN)).toThrow(RangeError);
  });

  it('moves by hand with advanceBy, forwards only and in whole milliseconds', () => {
    const clock = new VirtualClock(1_000);
    clock.jump(-100);
    clock.advanceBy(250);
    expect(clock.monotonicNow()).toBe(1_250);
    expect(clock.now()).toBe(1_150);
    expect(clock.elapsedMs).toBe(250);
    clock.advanceBy(0);
    expect(clock.monotonicNow()).toBe(1_250);
    expect(() => clock.advanceBy(-1)).toThrow(RangeError);
    expect(() => clock.advanceBy(0.5)).toThrow(RangeError);
    expect(clock.monotonicNow()).toBe(1_250);
  });
});
