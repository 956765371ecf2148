import { wallClockMs } from './wall-clock.ts';

/** Where progress goes: a terminal gets one line redrawn in place, anything else gets plain lines. */
export type ProgressSink = { tty: true; columns: number; write(text: string): void } | { tty: false; line(text: string): void };

/** Plain output: a line per tenth of the run or per half minute, and never two within five seconds. */
const PLAIN_FRACTION_STEP = 0.1;
const PLAIN_LINE_EVERY_MS = 30_000;
const PLAIN_LINE_GAP_MS = 5_000;
/** A terminal is redrawn at most this often, so progress costs nothing next to the runs. */
const TTY_REDRAW_MS = 100;

/**
 * Progress of a check on stderr. In CI logs it must stay short (a few lines per run, whatever the
 * seed count), and on a terminal it is a single line with the count, seeds per second and an ETA.
 */
export class Progress {
  private done = 0;
  private failing = 0;
  private readonly startedMs: number;
  private lastDrawMs = Number.NEGATIVE_INFINITY;
  private lastLineMs: number;
  private lastLineDone = 0;
  private drawn = false;

  constructor(
    private readonly total: number,
    private readonly sink: ProgressSink,
    private readonly now: () => number = wallClockMs,
  ) {
    this.startedMs = now();
    this.lastLineMs = this.startedMs;
  }

  /** One more run finished. */
  advance(failed: boolean): void {
    this.done++;
    if (failed) this.failing++;
    const nowMs = this.now();
    if (this.sink.tty) {
      if (nowMs - this.lastDrawMs >= TTY_REDRAW_MS || this.done === this.total) this.draw(nowMs);
      return;
    }
    const sinceLine = nowMs - this.lastLineMs;
    const stepped = this.done - this.lastLineDone >= Math.max(1, this.total * PLAIN_FRACTION_STEP);
    if (this.done < this.total && sinceLine >= PLAIN_LINE_GAP_MS && (stepped || sinceLine >= PLAIN_LINE_EVERY_MS)) {
      this.sink.line(`check: ${this.status(nowMs)}`);
      this.lastLineMs = nowMs;
      this.lastLineDone = this.done;
    }
  }

  /** Prints a line (a failure) without tearing the bar. */
  note(line: string): void {
    if (!this.sink.tty) return this.sink.line(line);
    this.sink.write(`${this.drawn ? '\r\x1b[K' : ''}${line}\n`);
    this.drawn = false;
    this.draw(this.now());
  }

  /** Removes the bar, so the summary starts on a clean line. */
  finish(): void {
    if (this.sink.tty && this.drawn) this.sink.write('\r\x1b[K');
    this.drawn = false;
  }

  private draw(nowMs: number): void {
    if (!this.sink.tty) return;
    const status = this.status(nowMs);
    const width = Math.max(10, Math.min(30, this.sink.columns - status.length - 4));
    const filled = this.total === 0 ? width : Math.round((width * this.done) / this.total);
    this.sink.write(`\r\x1b[K[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${status}`);
    this.drawn = true;
    this.lastDrawMs = nowMs;
  }

  private status(nowMs: number): string {
    const elapsedS = (nowMs - this.startedMs) / 1000;
    const rate = elapsedS > 0 ? this.done / elapsedS : 0;
    const percent = this.total === 0 ? 100 : Math.floor((100 * this.done) / this.total);
    const eta = rate > 0 ? duration((this.total - this.done) / rate) : '?';
    const failing = this.failing === 0 ? '' : `  ${this.failing} failing`;
    return `${this.done}/${this.total} runs (${percent}%)  ${rate.toFixed(1)} seeds/s  ETA ${eta}${failing}`;
  }
}

/** `1:05`, `12:00`, `1:02:03`. */
export function duration(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  const hours = Math.floor(whole / 3600);
  const minutes = Math.floor((whole % 3600) / 60);
  const rest = String(whole % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${rest}` : `${minutes}:${rest}`;
}
