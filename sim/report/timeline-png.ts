import { readFileSync } from 'node:fs';
import { CHROMIUM_INSTALL_HINT, findChromium, svgToPng } from './chromium.ts';

/**
 * `npx tsx sim/report/timeline-png.ts TIMELINE.svg OUT.png [SCALE]`: a picture of a report's timeline
 * (the timeline.svg beside its index.html), through headless Chromium. reports/timeline.png, the
 * README's picture, was made this way:
 *
 *   leasehold report --scenario mixed --seeds 1 --seed readme-7 --out reports/readme
 *   npx tsx sim/report/timeline-png.ts reports/readme/timeline.svg reports/timeline.png 1.5
 */
const [svgPath, pngPath, scale] = process.argv.slice(2);
if (svgPath === undefined || pngPath === undefined) {
  process.stderr.write('usage: npx tsx sim/report/timeline-png.ts TIMELINE.svg OUT.png [SCALE]\n');
  process.exit(64);
}
const chromium = await findChromium();
if (chromium === undefined) {
  process.stderr.write(`headless Chromium is not installed: ${CHROMIUM_INSTALL_HINT}\n`);
  process.exit(3);
}
const look = await svgToPng(chromium, readFileSync(svgPath, 'utf8'), pngPath, scale === undefined ? 1 : Number(scale));
if (look.exitCode !== 0 || look.console.length > 0) {
  process.stderr.write(`chromium exited ${look.exitCode}; console: ${look.console.join('\n') || 'none'}\n${look.stderr}\n`);
  process.exit(3);
}
process.stdout.write(`${pngPath}\n`);
