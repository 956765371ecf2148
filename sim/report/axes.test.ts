import { describe, expect, it } from 'vitest';
import { AXIS_CHAR_WIDTH, formatCount, labelWidth, timeTicks, yAxis, yMargin } from './axes.ts';
import { budgetPlotSvg, histogramSvg, seriesChartSvg } from './svg.ts';

/** The left margin of a chart: the x of its y labels' right edge (text-anchor end) and the widest label. */
function yLabels(svg: string): { x: number; text: string }[] {
  return [...svg.matchAll(/<text x="([\d.]+)" y="[\d.]+" text-anchor="end" class="tl-axis">([^<]*)<\/text>/g)].map((match) => ({ x: Number(match[1]), text: match[2]! }));
}

describe('axis labels (issue 34 item 5)', () => {
  it('abbreviates large counts and keeps small ones whole', () => {
    expect(formatCount(0)).toBe('0');
    expect(formatCount(9_999)).toBe('9999');
    expect(formatCount(10_000)).toBe('10k');
    expect(formatCount(100_000)).toBe('100k');
    expect(formatCount(21_600)).toBe('21.6k');
    expect(formatCount(1_500_000)).toBe('1.5M');
    expect(formatCount(100_000_000)).toBe('100M');
    expect(formatCount(-250_000)).toBe('-250k');
    expect(formatCount(2.5)).toBe('2.5');
    for (let exponent = 0; exponent < 12; exponent++) expect(formatCount(-(10 ** exponent) * 9.99).length).toBeLessThanOrEqual(7);
  });

  it('gives the y labels a margin at least as wide as the longest, up to 9 characters, so none is clipped', () => {
    for (const high of [1, 9, 10, 99, 100, 1_000, 9_999, 10_000, 100_000, 123_456, 1_000_000, 99_999_999, 100_000_000, 5e9]) {
      const axis = yAxis(0, high);
      for (const tick of axis.ticks) expect(labelWidth(tick.label)).toBeLessThanOrEqual(axis.labelWidth);
      expect(yMargin(axis)).toBeGreaterThanOrEqual(axis.labelWidth + 1);
    }
    // Whatever the labels are (9 characters here), a chart's left margin holds them.
    const wide = yAxis(-123_456_789, 0);
    expect(yMargin(wide)).toBeGreaterThanOrEqual(Math.max(...wide.ticks.map((tick) => tick.label.length)) * AXIS_CHAR_WIDTH);
    expect(yMargin({ labelWidth: 9 * AXIS_CHAR_WIDTH })).toBeGreaterThan(9 * AXIS_CHAR_WIDTH);
  });

  it('draws a budget of 100000 with its labels whole and inside the picture (not "00000")', () => {
    const svg = budgetPlotSvg({ budget: 'model_tokens', kind: 'rate', scope: '', limit: 100_000, seed: '1', index: 0, fromMs: 0, toMs: 90_000, points: [{ at: 0, level: 100_000 }, { at: 30_000, level: 40_000 }] }, 'model_tokens');
    const labels = yLabels(svg);
    expect(labels.map((label) => label.text)).toContain('100k');
    for (const label of labels) expect(label.x - labelWidth(label.text)).toBeGreaterThanOrEqual(0);
    const histogram = histogramSvg([{ label: 'all', bins: [{ fromMs: 0, toMs: 1_000, count: 123_456_789 }] }], 'h');
    for (const label of yLabels(histogram)) expect(label.x - labelWidth(label.text)).toBeGreaterThanOrEqual(24);
    const chart = seriesChartSvg({ className: 'c', title: 't', caption: 'c', yTitle: 'y', fromMs: 0, toMs: 1_000, series: [{ label: 'a', points: [{ at: 0, value: 987_654_321 }] }] });
    for (const label of yLabels(chart)) expect(label.x - labelWidth(label.text)).toBeGreaterThanOrEqual(20);
  });

  it('never overlaps two consecutive x tick labels, for widths 300..1600 px and durations 10 s..2 h', () => {
    const durations: number[] = [];
    for (let ms = 10_000; ms <= 7_200_000; ms = Math.ceil(ms * 1.07)) durations.push(ms);
    durations.push(7_200_000, 75_000, 90_000, 100_000);
    for (let width = 300; width <= 1_600; width += 25) {
      for (const duration of durations) {
        const left = 40;
        const ticks = timeTicks(duration, width - left - 18, left, { overhang: 18 });
        expect(ticks.length).toBeGreaterThanOrEqual(2);
        for (let index = 1; index < ticks.length; index++) {
          const [before, tick] = [ticks[index - 1]!, ticks[index]!];
          // The boxes, from each label's own width centred on its tick, do not intersect.
          expect(tick.x - labelWidth(tick.label) / 2, `${width}px ${duration}ms: ${before.label} ${tick.label}`).toBeGreaterThan(before.x + labelWidth(before.label) / 2);
          expect(tick.x + labelWidth(tick.label) / 2).toBeLessThanOrEqual(width);
        }
      }
    }
  });

  it('spaces the ticks of a 440 px budget plot over 1m40s (which printed "1m1m15s1m30s")', () => {
    const svg = budgetPlotSvg({ budget: 'b', kind: 'concurrency', scope: '', limit: 4, seed: '1', index: 0, fromMs: 0, toMs: 100_000, points: [{ at: 0, level: 0 }] }, 'b');
    const ticks = [...svg.matchAll(/<text x="([\d.]+)" y="[\d.]+" text-anchor="middle" class="tl-axis">([^<]*)<\/text>/g)].map((match) => ({ x: Number(match[1]), text: match[2]! }));
    expect(ticks.length).toBeGreaterThanOrEqual(3);
    for (let index = 1; index < ticks.length; index++) expect(ticks[index]!.x - ticks[index - 1]!.x).toBeGreaterThan((labelWidth(ticks[index]!.text) + labelWidth(ticks[index - 1]!.text)) / 2);
  });
});
