/**
 * Rendering of `oncely demo`: one line per occurrence as it completes (or is skipped), a few
 * event lines (kill, restart, recovery), and on a terminal a progress line redrawn in place.
 * Colours only when the output is a TTY and `NO_COLOR` is unset; on anything else, plain lines
 * and no carriage returns.
 */
import type { LedgerEntry } from './ledger.js';
import { demoJob } from './sample-jobs.js';

const NODE_COLOURS = [36, 35, 33, 34, 32, 96, 95, 93, 94, 92];

export interface Style {
  /** The node's name in its colour, padded to `width` (before colouring, so columns line up). */
  node(name: string, width?: number): string;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
}

function makeStyle(colour: boolean, nodes: readonly string[]): Style {
  const paint = (code: number | string) => (text: string) =>
    colour ? `\u001b[${code}m${text}\u001b[0m` : text;
  return {
    node: (name, width = 0) => {
      const i = nodes.indexOf(name);
      const text = name.padEnd(width);
      return i < 0 ? text : paint(NODE_COLOURS[i % NODE_COLOURS.length]!)(text);
    },
    bold: paint(1),
    dim: paint(2),
    red: paint('1;31'),
    green: paint(32),
    yellow: paint(33),
  };
}

/** `HH:MM:SS.mmm` in UTC. */
export function clockTime(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

export interface ProgressState {
  elapsedMs: number;
  runs: number;
  alive: number;
}

export class LiveView {
  readonly style: Style;
  private readonly tty: boolean;
  private progressShown = false;
  private lastProgress: ProgressState | undefined;

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly durationMs: number,
    private readonly nodes: readonly string[],
    private readonly startedAt: number,
  ) {
    this.tty = (out as { isTTY?: boolean }).isTTY === true;
    const noColor = process.env['NO_COLOR'] !== undefined && process.env['NO_COLOR'] !== '';
    this.style = makeStyle(this.tty && !noColor, nodes);
  }

  private write(text: string): void {
    this.out.write(text);
  }

  private clearProgress(): void {
    if (this.progressShown) this.write('\r\u001b[2K');
    this.progressShown = false;
  }

  /** A plain line (no time offset). */
  plain(text = ''): void {
    this.clearProgress();
    this.write(`${text}\n`);
    this.redraw();
  }

  /** A line with the demo's time offset in front. */
  event(text: string): void {
    const offset = `+${seconds(performance.now() - this.startedAt)}`.padStart(7);
    this.plain(`${this.style.dim(offset)}  ${text}`);
  }

  columns(): void {
    this.plain(
      this.style.dim(`${'time'.padStart(7)}  ${'job'.padEnd(12)} ${'fire time (UTC)'.padEnd(15)} shard node`),
    );
  }

  private occurrence(job: string, fireTime: number, shard: number | null, rest: string): string {
    const shardText = shard === null ? '' : String(shard);
    return `${job.padEnd(12)} ${clockTime(fireTime).padEnd(15)} ${shardText.padEnd(5)} ${rest}`.trimEnd();
  }

  /** A completed run, from the ledger; `note` explains a recovery. */
  run(e: LedgerEntry, note?: string): void {
    const parts = [this.style.node(e.node, 7)];
    if ((demoJob(e.job)?.workMs ?? 0) >= 1_000)
      parts.push(this.style.dim(`took ${seconds(e.finishedAt - e.startedAt)}`));
    if (e.source === 'recover')
      parts.push(this.style.yellow(note ?? `recovered: attempt ${e.attempt}, token ${e.token}`));
    else if (e.source === 'misfire') parts.push(this.style.yellow(`late: run once by the misfire policy`));
    else if (e.source !== 'schedule') parts.push(this.style.yellow(`${e.source}, attempt ${e.attempt}`));
    this.event(this.occurrence(e.job, e.fireTime, e.shard, parts.join('  ')));
  }

  /** An indented occurrence line under an event (no time offset). */
  detail(o: { job: string; fireTime: number; shard: number | null }, text: string): void {
    this.plain(`         ${this.occurrence(o.job, o.fireTime, o.shard, `${' '.repeat(7)} ${text}`)}`);
  }

  skipped(job: string, fireTime: number, shard: number | null): void {
    this.event(
      this.occurrence(
        job,
        fireTime,
        shard,
        `${this.style.dim('·'.padEnd(7))} ${this.style.dim('skipped: the previous run is still going (overlap: skip)')}`,
      ),
    );
  }

  /** `fireTime`: the replay, or the latest of `count` skipped fire times. */
  misfired(job: string, fireTime: number, action: 'skipped' | 'run', count: number | null = 1): void {
    const what =
      action === 'run'
        ? 'no node claimed it in time: it runs once, late'
        : count === 1
          ? 'no node claimed it in time: skipped'
          : `no node claimed it in time: skipped, with the ones before it (${count ?? 'many'} in all)`;
    this.event(
      this.occurrence(job, fireTime, null, `${'·'.padEnd(7)} ${this.style.yellow(`misfired: ${what}`)}`),
    );
  }

  /** Redraws the progress line (TTY only). */
  progress(state: ProgressState): void {
    this.lastProgress = state;
    this.redraw();
  }

  private redraw(): void {
    if (!this.tty || !this.lastProgress) return;
    const s = this.lastProgress;
    const text = this.style.dim(
      `  ${seconds(Math.min(s.elapsedMs, this.durationMs))} / ${seconds(this.durationMs)} · ${s.runs} ${s.runs === 1 ? 'run' : 'runs'} · nodes alive ${s.alive}/${this.nodes.length}`,
    );
    this.write(`\r\u001b[2K${text}`);
    this.progressShown = true;
  }

  /** Stops drawing the progress line. */
  finish(): void {
    this.clearProgress();
    this.lastProgress = undefined;
  }
}
