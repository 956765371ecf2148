import { formatCount, labelWidth, timeLabel, timeTicks, yAxis, yMargin } from './axes.ts';
import type { BudgetPlot } from './digest.ts';
import type { HistogramBin } from './stats.ts';
import { formatMs, shortMs } from './stats.ts';
import type { MarkerKind, TimelineMarker, TimelineModel, TimelineSpan } from './timeline-model.ts';

/**
 * Inline SVG for the HTML report: the timeline of one seed and the wait-time histogram. Plain strings,
 * no script and no external reference, so a report opens anywhere (and in headless Chromium) offline.
 * Every shape carries a <title>, which browsers show on hover.
 */

export function esc(text: string | number): string {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** Span colours by generation: g1, g2, g3, g4 and later. */
export const GENERATION_COLOURS = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#e15759'] as const;

export function generationColour(generation: number): string {
  return GENERATION_COLOURS[Math.min(GENERATION_COLOURS.length, Math.max(1, generation)) - 1]!;
}

/** The figures' own style, inside each <svg>, so an SVG saved on its own looks the same as inline. */
export const SVG_STYLE = [
  'text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }',
  '.tl-axis { font-size: 11px; fill: #555; }',
  '.tl-lane { font-size: 12px; fill: #222; font-weight: 600; }',
  '.tl-span { font-size: 9px; fill: #fff; pointer-events: none; }',
  '.tl-note { font-size: 11px; fill: #444; }',
  '.tl-legend { font-size: 12px; fill: #222; }',
].join(' ');

const n = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(1));

const TIMELINE_WIDTH = 1320;
const LABEL_WIDTH = 92;
const RIGHT_PAD = 18;
const AXIS_HEIGHT = 30;
const ROW_HEIGHT = 13;
const LANE_PAD = 4;
const LANE_GAP = 4;

/** Axis steps in ms; the first that gives at most MAX_TICKS ticks is used. */
const TICK_STEPS = [1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000];
const MAX_TICKS = 14;

export function tickStep(endMs: number): number {
  return TICK_STEPS.find((step) => endMs / step <= MAX_TICKS) ?? Math.ceil(endMs / MAX_TICKS / 3_600_000) * 3_600_000;
}

/** `0s`, `45s`, `2m`, `2m30s`, `1h5m` (axes.ts timeLabel). */
export const axisLabel = timeLabel;

interface LegendItem {
  label: string;
  draw: (x: number, y: number) => string;
}

function markerShape(kind: MarkerKind, x: number, y: number): string {
  switch (kind) {
    case 'kill':
      return `<path d="M${n(x - 5)},${n(y - 5)}L${n(x + 5)},${n(y + 5)}M${n(x - 5)},${n(y + 5)}L${n(x + 5)},${n(y - 5)}" stroke="#c00" stroke-width="2.5" fill="none"/>`;
    case 'revive':
      return `<path d="M${n(x)},${n(y - 6)}L${n(x + 6)},${n(y + 5)}L${n(x - 6)},${n(y + 5)}Z" fill="#2a9d4a" stroke="#fff" stroke-width="0.8"/>`;
    case 'pause':
      return `<g fill="#333"><rect x="${n(x - 4)}" y="${n(y - 5)}" width="3" height="10"/><rect x="${n(x + 1)}" y="${n(y - 5)}" width="3" height="10"/></g>`;
    case 'resume':
      return `<path d="M${n(x - 3)},${n(y - 5)}L${n(x + 5)},${n(y)}L${n(x - 3)},${n(y + 5)}Z" fill="#333"/>`;
    case 'lease-expired':
      return `<path d="M${n(x)},${n(y - 6)}L${n(x + 6)},${n(y)}L${n(x)},${n(y + 6)}L${n(x - 6)},${n(y)}Z" fill="#ff9f1c" stroke="#7a4a00" stroke-width="1"/>`;
    case 'refused':
      return `<g><line x1="${n(x)}" y1="${n(y - 7)}" x2="${n(x)}" y2="${n(y + 7)}" stroke="#c00" stroke-width="1.5"/><circle cx="${n(x)}" cy="${n(y - 4)}" r="3.5" fill="#c00" stroke="#fff" stroke-width="0.8"/></g>`;
    case 'restart':
      return `<rect x="${n(x - 5)}" y="${n(y - 5)}" width="10" height="10" fill="#7b2cbf"/>`;
    case 'reopen':
      return `<rect x="${n(x - 4)}" y="${n(y - 4)}" width="8" height="8" fill="#fff" stroke="#7b2cbf" stroke-width="2"/>`;
    case 'clock-jump':
      return `<path d="M${n(x - 5)},${n(y - 5)}L${n(x + 5)},${n(y)}L${n(x - 5)},${n(y + 5)}Z" fill="#1f78b4"/>`;
    case 'enqueue-refused':
      return `<circle cx="${n(x)}" cy="${n(y)}" r="4" fill="#fff" stroke="#c00" stroke-width="2"/>`;
    case 'duplicate-delivery':
      return `<circle cx="${n(x)}" cy="${n(y)}" r="3.5" fill="#17a2b8"/>`;
  }
}

const MARKER_LEGEND: readonly [MarkerKind, string][] = [
  ['kill', 'kill'],
  ['revive', 'revive (new incarnation)'],
  ['pause', 'pause'],
  ['resume', 'resume'],
  ['lease-expired', 'lease expired (task uncertain)'],
  ['refused', 'refused write (stale_lease)'],
  ['enqueue-refused', 'enqueue refused'],
  ['restart', 'scheduler restart'],
  ['reopen', 'scheduler reopened'],
  ['clock-jump', 'clock jump'],
  ['duplicate-delivery', 'duplicate delivery'],
];

/** The timeline of one seed: lanes of incarnations, spans coloured by generation, markers, legend, axis. */
export function timelineSvg(model: TimelineModel, title: string): string {
  const endMs = Math.max(1, model.endMs);
  const plotWidth = TIMELINE_WIDTH - LABEL_WIDTH - RIGHT_PAD;
  const x = (ms: number) => LABEL_WIDTH + (Math.min(Math.max(ms, 0), endMs) / endMs) * plotWidth;

  // Lane geometry.
  const laneTop: number[] = [];
  const laneHeight: number[] = [];
  let y = AXIS_HEIGHT;
  for (const lane of model.lanes) {
    laneTop.push(y);
    const height = lane.rows * ROW_HEIGHT + 2 * LANE_PAD;
    laneHeight.push(height);
    y += height + LANE_GAP;
  }
  const plotBottom = y;
  const laneMid = (lane: number) => laneTop[lane]! + laneHeight[lane]! / 2;

  const parts: string[] = [];
  parts.push(
    `<defs><pattern id="paused-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#e9e3d0"/><line x1="0" y1="0" x2="0" y2="6" stroke="#a89a6a" stroke-width="2"/></pattern></defs>`,
  );
  // Axis and grid.
  const axis: string[] = [];
  for (const tick of timeTicks(endMs, plotWidth, LABEL_WIDTH, { minStepMs: tickStep(endMs), overhang: RIGHT_PAD })) {
    const tx = tick.x;
    axis.push(`<line x1="${n(tx)}" y1="${AXIS_HEIGHT - 6}" x2="${n(tx)}" y2="${n(plotBottom)}" stroke="#e3e3e3" stroke-width="1"/>`);
    axis.push(`<text x="${n(tx)}" y="${AXIS_HEIGHT - 10}" text-anchor="middle" class="tl-axis">${esc(tick.label)}</text>`);
  }
  parts.push(`<g class="tl-grid">${axis.join('')}</g>`);
  // Lane backgrounds and labels.
  model.lanes.forEach((lane, index) => {
    const top = laneTop[index]!;
    const height = laneHeight[index]!;
    const isQueue = index === 0;
    parts.push(`<rect x="${LABEL_WIDTH}" y="${n(top)}" width="${n(plotWidth)}" height="${height}" fill="${isQueue ? '#f6f2fb' : '#fafafa'}"/>`);
    if (!isQueue) {
      const from = x(lane.fromMs);
      parts.push(
        `<rect x="${n(from)}" y="${n(top)}" width="${n(Math.max(1, x(lane.toMs) - from))}" height="${height}" fill="#e8edf3"><title>${esc(`${lane.id}: alive ${formatMs(lane.fromMs)} to ${formatMs(lane.toMs)}${lane.end === 'killed' ? ' (killed)' : lane.end === 'exited' ? ' (exited after a drain)' : ''}`)}</title></rect>`,
      );
    }
    parts.push(`<text x="${LABEL_WIDTH - 8}" y="${n(top + height / 2 + 4)}" text-anchor="end" class="tl-lane">${esc(isQueue ? 'queue' : lane.id)}</text>`);
  });
  // Bands: scheduler down across every lane, paused inside its lane.
  for (const band of model.bands) {
    const from = x(band.fromMs);
    const width = Math.max(2, x(band.toMs) - from);
    if (band.kind === 'scheduler-down') {
      parts.push(`<rect x="${n(from)}" y="${AXIS_HEIGHT}" width="${n(width)}" height="${n(plotBottom - AXIS_HEIGHT)}" fill="#7b2cbf" fill-opacity="0.12"><title>${esc(`scheduler down ${formatMs(band.fromMs)} to ${formatMs(band.toMs)}`)}</title></rect>`);
    } else if (band.lane !== null) {
      parts.push(`<rect x="${n(from)}" y="${n(laneTop[band.lane]!)}" width="${n(width)}" height="${laneHeight[band.lane]!}" fill="url(#paused-hatch)"><title>${esc(`${model.lanes[band.lane]!.id} paused ${formatMs(band.fromMs)} to ${formatMs(band.toMs)}`)}</title></rect>`);
    }
  }
  // Liveness phase.
  if (model.safetyEndMs > 0 && model.safetyEndMs < endMs) {
    const lx = x(model.safetyEndMs);
    parts.push(`<line x1="${n(lx)}" y1="${AXIS_HEIGHT - 4}" x2="${n(lx)}" y2="${n(plotBottom)}" stroke="#555" stroke-width="1.2" stroke-dasharray="5,4"/>`);
    const nearRight = lx > TIMELINE_WIDTH - RIGHT_PAD - 200;
    parts.push(`<text x="${n(nearRight ? lx - 4 : lx + 4)}" y="${n(plotBottom + 12)}" text-anchor="${nearRight ? 'end' : 'start'}" class="tl-note">liveness phase: faults stop, everyone recovers</text>`);
  }
  // Spans.
  const highlighted = new Set(model.highlight ?? []);
  for (const span of model.spans) parts.push(spanShape(span, x, laneTop[span.lane]! + LANE_PAD + span.row * ROW_HEIGHT, model.lanes[span.lane]!.id, highlighted.has(span.taskId)));
  // Markers, on top.
  for (const marker of model.markers) parts.push(markerGroup(marker, x(marker.atMs), laneMid(marker.lane)));

  // Legend below the plot.
  const legendTop = plotBottom + 26;
  const generations = Math.max(1, ...model.spans.map((span) => span.generation));
  const items: LegendItem[] = [];
  for (let generation = 1; generation <= Math.min(generations, GENERATION_COLOURS.length); generation++) {
    const label = generation === GENERATION_COLOURS.length ? `generation ${generation}+` : `generation ${generation}`;
    items.push({ label, draw: (lx, ly) => `<rect x="${lx - 9}" y="${ly - 5}" width="18" height="10" rx="2" fill="${generationColour(generation)}"/>` });
  }
  if (model.spans.some((span) => highlighted.has(span.taskId))) {
    items.push({ label: 'task named by a violation', draw: (lx, ly) => `<rect x="${lx - 9}" y="${ly - 5}" width="18" height="10" rx="2" fill="${generationColour(1)}" stroke="#e6007e" stroke-width="2.5"/>` });
  }
  if (model.spans.some((span) => span.end === 'failed')) {
    items.push({ label: 'run ended failed', draw: (lx, ly) => `<rect x="${lx - 9}" y="${ly - 5}" width="18" height="10" rx="2" fill="${generationColour(1)}" stroke="#8b0000" stroke-width="1.5"/>` });
  }
  if (model.spans.some((span) => span.end === 'running')) {
    items.push({ label: 'still running at the end', draw: (lx, ly) => `<rect x="${lx - 9}" y="${ly - 5}" width="18" height="10" rx="2" fill="${generationColour(1)}" stroke="#000" stroke-dasharray="3,2"/>` });
  }
  items.push({ label: 'paused', draw: (lx, ly) => `<rect x="${lx - 9}" y="${ly - 6}" width="18" height="12" fill="url(#paused-hatch)"/>` });
  items.push({ label: 'worker alive', draw: (lx, ly) => `<rect x="${lx - 9}" y="${ly - 6}" width="18" height="12" fill="#e8edf3" stroke="#ccd"/>` });
  if (model.bands.some((band) => band.kind === 'scheduler-down')) {
    items.push({ label: 'scheduler down', draw: (lx, ly) => `<rect x="${lx - 9}" y="${ly - 6}" width="18" height="12" fill="#7b2cbf" fill-opacity="0.2"/>` });
  }
  const used = new Set(model.markers.map((marker) => marker.kind));
  for (const [kind, label] of MARKER_LEGEND) if (used.has(kind) || kind === 'kill' || kind === 'lease-expired' || kind === 'refused') items.push({ label, draw: (lx, ly) => markerShape(kind, lx, ly) });
  const legend: string[] = [];
  let lx = LABEL_WIDTH + 12;
  let ly = legendTop;
  for (const item of items) {
    const width = 34 + item.label.length * 7.2;
    if (lx + width > TIMELINE_WIDTH - RIGHT_PAD) {
      lx = LABEL_WIDTH + 12;
      ly += 20;
    }
    legend.push(`<g>${item.draw(lx, ly)}<text x="${n(lx + 14)}" y="${n(ly + 4)}" class="tl-legend">${esc(item.label)}</text></g>`);
    lx += width;
  }
  const height = ly + 18;
  const dropped = model.truncated.spans + model.truncated.markers;
  const caption = dropped > 0 ? ` (${model.truncated.spans} spans and ${model.truncated.markers} markers past the drawing cap left out)` : '';
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 ${TIMELINE_WIDTH} ${n(height)}" width="${TIMELINE_WIDTH}" height="${n(height)}" style="width: 100%; height: auto; min-width: 900px" role="img" aria-label="${esc(title)}">`,
    `<title>${esc(`${title}${caption}`)}</title>`,
    `<style>${SVG_STYLE}</style>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${LABEL_WIDTH - 8}" y="${AXIS_HEIGHT - 10}" text-anchor="end" class="tl-axis">time</text>`,
    // Two groups, so a test can tell the plot from the legend that repeats its colours (report.test.ts).
    '<g class="tl-plot">',
    ...parts,
    '</g>',
    '<g class="tl-legend-box">',
    `<text x="${LABEL_WIDTH - 8}" y="${n(legendTop + 4)}" text-anchor="end" class="tl-lane">legend</text>`,
    ...legend,
    '</g>',
    '</svg>',
  ].join('\n');
}

function spanShape(span: TimelineSpan, x: (ms: number) => number, top: number, laneId: string, highlighted: boolean): string {
  const from = x(span.fromMs);
  const width = Math.max(1.5, x(span.toMs) - from);
  const colour = generationColour(span.generation);
  const stroke = highlighted
    ? ' stroke="#e6007e" stroke-width="2.5"'
    : span.end === 'running'
      ? ' stroke="#000" stroke-dasharray="3,2"'
      : span.end === 'failed'
        ? ' stroke="#8b0000" stroke-width="1.5"'
        : '';
  const tip = `task ${span.taskId} (${span.tenant}) generation ${span.generation} on ${laneId}: ${formatMs(span.fromMs)} to ${formatMs(span.toMs)}, ended by ${span.end}${highlighted ? '; named by a violation' : ''}`;
  const label = width >= 26 ? `<text x="${n(from + 3)}" y="${n(top + ROW_HEIGHT - 4)}" class="tl-span">${span.taskId}</text>` : '';
  return `<g><rect x="${n(from)}" y="${n(top)}" width="${n(width)}" height="${ROW_HEIGHT - 2}" rx="2" fill="${colour}"${stroke}><title>${esc(tip)}</title></rect>${label}</g>`;
}

function markerGroup(marker: TimelineMarker, x: number, y: number): string {
  return `<g class="tl-marker">${markerShape(marker.kind, x, y)}<title>${esc(`${formatMs(marker.atMs)}: ${marker.label}`)}</title></g>`;
}

/** Distinct colours for the histogram's priority bands, low priority light, high dark. */
const BAND_COLOURS = ['#9ecae1', '#6baed6', '#4292c6', '#2171b5', '#08519c', '#08306b'];

/**
 * The wait-time histogram: bins of human widths (stats.ts WAIT_BIN_EDGES_MS), one bar per bin stacked
 * by priority band, with a count axis and a legend.
 */
export function histogramSvg(series: readonly { label: string; bins: readonly HistogramBin[] }[], title: string): string {
  const width = 860;
  const height = 310;
  const right = 170;
  const top = 20;
  const bottom = 66;
  const binCount = series[0]?.bins.length ?? 0;
  const totals = Array.from({ length: binCount }, (_, index) => series.reduce((sum, entry) => sum + (entry.bins[index]?.count ?? 0), 0));
  const maxCount = Math.max(1, ...totals);
  const counts = yAxis(0, maxCount);
  const left = Math.max(56, yMargin(counts, 24));
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  const yMax = counts.max;
  const y = (count: number) => top + plotHeight - (count / yMax) * plotHeight;
  const barWidth = binCount === 0 ? 0 : plotWidth / binCount;
  const parts: string[] = [];
  for (const tick of counts.ticks) {
    parts.push(`<line x1="${left}" y1="${n(y(tick.value))}" x2="${left + plotWidth}" y2="${n(y(tick.value))}" stroke="#e3e3e3"/>`);
    parts.push(`<text x="${left - 6}" y="${n(y(tick.value) + 4)}" text-anchor="end" class="tl-axis">${esc(tick.label)}</text>`);
  }
  for (let index = 0; index < binCount; index++) {
    let base = 0;
    const bx = left + index * barWidth;
    series.forEach((entry, seriesIndex) => {
      const bin = entry.bins[index]!;
      if (bin.count === 0) return;
      const y0 = y(base);
      const y1 = y(base + bin.count);
      base += bin.count;
      const range = bin.toMs === null ? `${shortMs(bin.fromMs)} or more` : `${shortMs(bin.fromMs)} to ${shortMs(bin.toMs)}`;
      parts.push(
        `<rect x="${n(bx + 2)}" y="${n(y1)}" width="${n(Math.max(1, barWidth - 4))}" height="${n(Math.max(0.5, y0 - y1))}" fill="${BAND_COLOURS[Math.min(seriesIndex, BAND_COLOURS.length - 1)]}"><title>${esc(`${entry.label}, wait ${range}: ${bin.count} task(s)`)}</title></rect>`,
      );
    });
    const bin = series[0]!.bins[index]!;
    const label = bin.toMs === null ? `≥${shortMs(bin.fromMs)}` : `<${shortMs(bin.toMs)}`;
    const lx = bx + barWidth / 2 + 4;
    const ly = top + plotHeight + 14;
    parts.push(`<text x="${n(lx)}" y="${ly}" text-anchor="end" transform="rotate(-35 ${n(lx)} ${ly})" class="tl-axis">${esc(label)}</text>`);
  }
  parts.push(`<line x1="${left}" y1="${top + plotHeight}" x2="${left + plotWidth}" y2="${top + plotHeight}" stroke="#888"/>`);
  parts.push(`<text x="${left + plotWidth / 2}" y="${height - 12}" text-anchor="middle" class="tl-legend">wait from enqueue to first claim (bin upper edge)</text>`);
  parts.push(`<text x="14" y="${top + plotHeight / 2}" transform="rotate(-90 14 ${top + plotHeight / 2})" text-anchor="middle" class="tl-legend">tasks</text>`);
  series.forEach((entry, index) => {
    const ly = top + 8 + index * 18;
    parts.push(`<rect x="${width - right + 16}" y="${ly - 6}" width="14" height="12" fill="${BAND_COLOURS[Math.min(index, BAND_COLOURS.length - 1)]}"/>`);
    parts.push(`<text x="${width - right + 36}" y="${ly + 4}" class="tl-legend">${esc(entry.label)}</text>`);
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" class="histogram" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${esc(title)}">`,
    `<title>${esc(title)}</title>`,
    `<style>${SVG_STYLE}</style>`,
    ...parts,
    '</svg>',
  ].join('\n');
}

/** Budget plot colours: the level, and the limit line. */
export const BUDGET_LEVEL_COLOUR = '#2b8cbe';
export const BUDGET_LIMIT_COLOUR = '#d7301f';

/**
 * A small step plot of one budget's level over the queue clock (issue 16): units held (concurrency) or
 * left in the bucket (rate), whole units, with the limit (or capacity) as a dashed line.
 */
export function budgetPlotSvg(plot: BudgetPlot, title: string): string {
  const width = 440;
  const height = 184;
  const right = 12;
  const top = 36;
  const bottom = 30;
  const spanMs = Math.max(1, plot.toMs - plot.fromMs);
  const levels = plot.points.map((point) => point.level);
  const low = Math.min(0, ...levels);
  const high = Math.max(1, plot.limit, ...levels);
  const axisY = yAxis(low, high);
  const left = Math.max(40, yMargin(axisY));
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  const yMin = axisY.min;
  const yMax = axisY.max;
  const x = (ms: number) => left + (Math.min(Math.max(ms - plot.fromMs, 0), spanMs) / spanMs) * plotWidth;
  const y = (level: number) => top + plotHeight - ((level - yMin) / Math.max(1, yMax - yMin)) * plotHeight;
  const parts: string[] = [];
  for (const tick of axisY.ticks) {
    parts.push(`<line x1="${left}" y1="${n(y(tick.value))}" x2="${left + plotWidth}" y2="${n(y(tick.value))}" stroke="#eee"/>`);
    parts.push(`<text x="${left - 5}" y="${n(y(tick.value) + 4)}" text-anchor="end" class="tl-axis">${esc(tick.label)}</text>`);
  }
  for (const tick of timeTicks(spanMs, plotWidth, left, { overhang: right })) {
    parts.push(`<text x="${n(tick.x)}" y="${top + plotHeight + 14}" text-anchor="middle" class="tl-axis">${esc(tick.label)}</text>`);
  }
  parts.push(`<line x1="${left}" y1="${top + plotHeight}" x2="${left + plotWidth}" y2="${top + plotHeight}" stroke="#888"/>`);
  // The step path: hold each level until the next point, then jump.
  const path: string[] = [];
  plot.points.forEach((point, index) => {
    if (index === 0) path.push(`M${n(x(point.at))},${n(y(point.level))}`);
    else path.push(`H${n(x(point.at))}V${n(y(point.level))}`);
  });
  path.push(`H${n(x(plot.toMs))}`);
  parts.push(`<path class="budget-level" d="${path.join('')}" fill="none" stroke="${BUDGET_LEVEL_COLOUR}" stroke-width="1.6"><title>${esc(`${title}: ${plot.points.length} level change(s)`)}</title></path>`);
  if (plot.caption === undefined) {
    parts.push(`<line class="budget-limit" x1="${left}" y1="${n(y(plot.limit))}" x2="${left + plotWidth}" y2="${n(y(plot.limit))}" stroke="${BUDGET_LIMIT_COLOUR}" stroke-width="1.2" stroke-dasharray="5,3"><title>${esc(`${plot.kind === 'rate' ? 'capacity' : 'limit'} ${plot.limit}`)}</title></line>`);
  }
  const what = plot.kind === 'rate' ? 'units left in the bucket' : 'units held';
  parts.push(`<text x="${left}" y="14" class="tl-legend">${esc(title)}</text>`);
  parts.push(`<text x="${left}" y="28" class="tl-axis">${esc(plot.caption ?? `${what}; dashed: ${plot.kind === 'rate' ? 'capacity' : 'limit'} ${plot.limit}`)}</text>`);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" class="budget-plot" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${esc(title)}">`,
    `<title>${esc(title)}</title>`,
    `<style>${SVG_STYLE}</style>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...parts,
    '</svg>',
  ].join('\n');
}

/** Colours of the per-tenant series (fair share, depth), in tenant order. */
export const SERIES_COLOURS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#b07aa1', '#edc948', '#9c755f', '#ff9da7', '#bab0ac'] as const;

export interface ChartSeries {
  label: string;
  /** Step points: the value from `at` until the next point. */
  points: readonly { at: number; value: number }[];
}

export interface SeriesChart {
  /** The svg's class (a test finds the chart by it). */
  className: string;
  title: string;
  caption: string;
  yTitle: string;
  fromMs: number;
  toMs: number;
  series: readonly ChartSeries[];
  /** A dashed horizontal line (a bound), with its legend text. */
  line?: { value: number; label: string };
  width?: number;
}

/**
 * A step chart of a few series over the queue clock (fair share's weighted service, depth per tenant):
 * y labels abbreviated and measured (axes.ts), x ticks spaced from the width, the legend below the plot.
 * Every label from the run (tenants) is escaped.
 */
export function seriesChartSvg(chart: SeriesChart): string {
  const width = chart.width ?? 660;
  const top = 44;
  const plotHeight = 180;
  const right = 24;
  const spanMs = Math.max(1, chart.toMs - chart.fromMs);
  const values = chart.series.flatMap((entry) => entry.points.map((point) => point.value));
  const axisY = yAxis(Math.min(0, ...values), Math.max(1, chart.line?.value ?? 0, ...values));
  const left = yMargin(axisY, 22);
  const plotWidth = width - left - right;
  const x = (ms: number) => left + (Math.min(Math.max(ms - chart.fromMs, 0), spanMs) / spanMs) * plotWidth;
  const y = (value: number) => top + plotHeight - ((value - axisY.min) / Math.max(1, axisY.max - axisY.min)) * plotHeight;
  const parts: string[] = [];
  for (const tick of axisY.ticks) {
    parts.push(`<line x1="${left}" y1="${n(y(tick.value))}" x2="${left + plotWidth}" y2="${n(y(tick.value))}" stroke="#eee"/>`);
    parts.push(`<text x="${left - 6}" y="${n(y(tick.value) + 4)}" text-anchor="end" class="tl-axis">${esc(tick.label)}</text>`);
  }
  for (const tick of timeTicks(spanMs, plotWidth, left, { overhang: right })) {
    parts.push(`<line x1="${n(tick.x)}" y1="${top + plotHeight}" x2="${n(tick.x)}" y2="${top + plotHeight + 4}" stroke="#888"/>`);
    parts.push(`<text x="${n(tick.x)}" y="${top + plotHeight + 16}" text-anchor="middle" class="tl-axis">${esc(tick.label)}</text>`);
  }
  parts.push(`<line x1="${left}" y1="${top + plotHeight}" x2="${left + plotWidth}" y2="${top + plotHeight}" stroke="#888"/>`);
  parts.push(`<text x="12" y="${top + plotHeight / 2}" transform="rotate(-90 12 ${top + plotHeight / 2})" text-anchor="middle" class="tl-axis">${esc(chart.yTitle)}</text>`);
  chart.series.forEach((entry, index) => {
    const colour = SERIES_COLOURS[index % SERIES_COLOURS.length]!;
    const path: string[] = [];
    entry.points.forEach((point, at) => path.push(at === 0 ? `M${n(x(point.at))},${n(y(point.value))}` : `H${n(x(point.at))}V${n(y(point.value))}`));
    if (path.length > 0) path.push(`H${n(x(chart.toMs))}`);
    const last = entry.points[entry.points.length - 1]?.value ?? 0;
    parts.push(`<path class="series" data-series="${esc(entry.label)}" d="${path.join('')}" fill="none" stroke="${colour}" stroke-width="1.6"><title>${esc(`${entry.label}: ${entry.points.length} point(s), last ${formatCount(last)}`)}</title></path>`);
  });
  if (chart.line !== undefined) {
    parts.push(`<line class="series-bound" x1="${left}" y1="${n(y(chart.line.value))}" x2="${left + plotWidth}" y2="${n(y(chart.line.value))}" stroke="${BUDGET_LIMIT_COLOUR}" stroke-width="1.2" stroke-dasharray="5,3"><title>${esc(chart.line.label)}</title></line>`);
  }
  // Legend: one row per line of items, wrapped at the plot's width.
  const items = chart.series.map((entry, index) => ({ label: entry.label, swatch: `stroke="${SERIES_COLOURS[index % SERIES_COLOURS.length]!}" stroke-width="3"` }));
  if (chart.line !== undefined) items.push({ label: chart.line.label, swatch: `stroke="${BUDGET_LIMIT_COLOUR}" stroke-width="1.5" stroke-dasharray="5,3"` });
  const legend: string[] = [];
  let lx = left;
  let ly = top + plotHeight + 38;
  for (const item of items) {
    const itemWidth = 30 + labelWidth(item.label) * (12 / 11);
    if (lx > left && lx + itemWidth > width - right) {
      lx = left;
      ly += 18;
    }
    legend.push(`<g class="series-legend"><line x1="${n(lx)}" y1="${ly - 4}" x2="${n(lx + 20)}" y2="${ly - 4}" ${item.swatch}/><text x="${n(lx + 25)}" y="${ly}" class="tl-legend">${esc(item.label)}</text></g>`);
    lx += itemWidth + 12;
  }
  const height = ly + 12;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" class="${esc(chart.className)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${esc(chart.title)}">`,
    `<title>${esc(chart.title)}</title>`,
    `<style>${SVG_STYLE}</style>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${left}" y="16" class="tl-legend">${esc(chart.title)}</text>`,
    `<text x="${left}" y="32" class="tl-axis">${esc(chart.caption)}</text>`,
    ...parts,
    ...legend,
    '</svg>',
  ].join('\n');
}
