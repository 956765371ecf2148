/**
 * Axis layout shared by the report's charts (issue 34 item 5): y labels that fit their margin (the
 * margin is computed from the longest formatted tick, and large numbers are abbreviated, 100000 as
 * 100k) and x ticks that never overlap (the step is chosen from the plot's width and the labels'
 * width). Pure: the widths are estimates from the character count at the axis font (11px), erring wide.
 */

/** Width of one character of an axis label (11px system-ui; digits are about 6.1px, letters up to 7). */
export const AXIS_CHAR_WIDTH = 7;
/** Space kept between two consecutive x labels. */
export const X_LABEL_GAP = 10;

/** The estimated width of an axis label, in px. */
export function labelWidth(text: string): number {
  return text.length * AXIS_CHAR_WIDTH;
}

/** A count as an axis label: 950, 9500, 12k, 100k, 1.5M, 2G (at most one decimal; never more than 6 characters for |value| < 1e12). */
export function formatCount(value: number): string {
  const sign = value < 0 ? '-' : '';
  const abs = Math.abs(value);
  if (abs < 10_000) return `${sign}${Number.isInteger(abs) ? abs : Number(abs.toFixed(1))}`;
  const units: [number, string][] = [
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ];
  for (const [size, suffix] of units) {
    if (abs >= size) {
      const scaled = abs / size;
      const text = scaled >= 100 ? String(Math.round(scaled)) : String(Number(scaled.toFixed(1)));
      return `${sign}${text}${suffix}`;
    }
  }
  return `${sign}${abs}`;
}

/** A "nice" step (1, 2, 5 x 10^k) giving about `count` intervals over `range`. */
export function niceStep(range: number, count = 5): number {
  const rough = Math.max(range, 1) / count;
  const magnitude = 10 ** Math.floor(Math.log10(Math.max(1, rough)));
  const step = [1, 2, 5, 10].map((factor) => factor * magnitude).find((candidate) => candidate >= rough) ?? magnitude * 10;
  return Math.max(1, step);
}

export interface YAxis {
  min: number;
  max: number;
  step: number;
  ticks: { value: number; label: string }[];
  /** The widest label, in px: the left margin must be at least this plus the gap to the axis. */
  labelWidth: number;
}

/** Ticks from a nice step covering [low, high] (integers), with each label formatted and the widest measured. */
export function yAxis(low: number, high: number): YAxis {
  const step = niceStep(high - low);
  const min = Math.floor(low / step) * step;
  const max = Math.max(min + step, Math.ceil(high / step) * step);
  const ticks: { value: number; label: string }[] = [];
  for (let value = min; value <= max; value += step) ticks.push({ value, label: formatCount(value) });
  return { min, max, step, ticks, labelWidth: Math.max(...ticks.map((tick) => labelWidth(tick.label))) };
}

/** The left margin a y axis needs: its widest label, the gap between labels and the axis, and room for a rotated axis title when asked. */
export function yMargin(axis: Pick<YAxis, 'labelWidth'>, titleRoom = 0): number {
  return Math.ceil(axis.labelWidth + 8 + titleRoom);
}

/** Axis steps in ms, smallest first. */
export const TIME_STEPS = [
  1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000,
];

/** `0s`, `45s`, `2m`, `2m30s`, `1h5m`. */
export function timeLabel(ms: number): string {
  const seconds = Math.round(ms / 1_000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  const rest = seconds % 60;
  if (minutes < 60) return rest === 0 ? `${minutes}m` : `${minutes}m${rest}s`;
  const hours = Math.floor(minutes / 60);
  return `${hours}h${minutes % 60 === 0 ? '' : `${minutes % 60}m`}`;
}

export interface XTick {
  /** ms from the start of the axis. */
  ms: number;
  /** Pixel x (centre of the label). */
  x: number;
  label: string;
  /** The label's estimated box: [left, right]. */
  left: number;
  right: number;
}

/**
 * The x ticks of a time axis spanning `spanMs` over `plotWidth` px from `left`: the smallest step whose
 * labels, centred on their ticks, leave X_LABEL_GAP px between neighbours, at least `minStepMs`. A
 * label that would pass the plot's right edge by more than `overhang` px is dropped (the first, 0s,
 * is always kept).
 */
export function timeTicks(spanMs: number, plotWidth: number, left = 0, options: { minStepMs?: number; overhang?: number } = {}): XTick[] {
  const span = Math.max(1, spanMs);
  const overhang = options.overhang ?? 0;
  const ticksFor = (step: number): XTick[] => {
    const ticks: XTick[] = [];
    for (let ms = 0; ms <= span; ms += step) {
      const label = timeLabel(ms);
      const x = left + (ms / span) * plotWidth;
      const width = labelWidth(label);
      ticks.push({ ms, x, label, left: x - width / 2, right: x + width / 2 });
    }
    return ticks.filter((tick, index) => index === 0 || tick.right <= left + plotWidth + overhang);
  };
  const fits = (ticks: readonly XTick[]) => ticks.every((tick, index) => index === 0 || tick.left - ticks[index - 1]!.right >= X_LABEL_GAP);
  const candidates = TIME_STEPS.filter((step) => step >= (options.minStepMs ?? 0));
  for (const step of candidates) {
    const ticks = ticksFor(step);
    if (fits(ticks)) return ticks;
  }
  // Longer than any listed step allows: whole multiples of a day until they fit.
  for (let days = 2; ; days *= 2) {
    const ticks = ticksFor(days * 86_400_000);
    if (fits(ticks)) return ticks;
  }
}
