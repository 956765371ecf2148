import { readFileSync } from 'node:fs';
import { CHROMIUM_INSTALL_HINT, findChromium, launchChromium, svgToPng } from './chromium.ts';

/**
 * `npx tsx sim/report/timeline-png.ts TIMELINE.svg OUT.png [SCALE]`: a picture of a report's timeline
 * (the timeline.svg beside its index.html), through headless Chromium, for a ticket or a chat:
 *
 *   leasehold report --scenario mixed --seeds 1 --seed readme-7 --out reports/readme
 *   npx tsx sim/report/timeline-png.ts reports/readme/timeline.svg reports/readme/timeline.png 1.5
 */
const [svgPath, pngPath, scale] = process.argv.slice(2);
if (svgPath === undefined || pngPath === undefined) {
  process.stderr.write('usage: npx tsx sim/report/timeline-png.ts TIMELINE.svg OUT.png [SCALE]\n');
  process.exit(64);
}
const binary = await findChromium();
if (binary === undefined) {
  process.stderr.write(`headless Chromium is not installed: ${CHROMIUM_INSTALL_HINT}\n`);
  process.exit(3);
}
const browser = await launchChromium(binary);
try {
  const look = await svgToPng(browser, readFileSync(svgPath, 'utf8'), pngPath, scale === undefined ? 1 : Number(scale));
  if (look.console.length > 0) {
    process.stderr.write(`the page's console: ${look.console.join('\n')}\n`);
    process.exitCode = 3;
  } else process.stdout.write(`${pngPath}\n`);
} finally {
  await browser.close();
}
