/**
 * The run ledger: one JSON line per completed handler run, appended by the handler itself as its
 * last act. It is the demo's evidence, independent of the scheduler's own history: a duplicate is
 * two lines for one occurrence, whatever the store says. A handler killed mid-run writes nothing,
 * so a recovered run is the occurrence's only line.
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import type { RunSource } from '../../scheduler/types.js';

export interface LedgerEntry {
  job: string;
  /** Epoch ms of the occurrence's fire time. */
  fireTime: number;
  shard: number | null;
  node: string;
  attempt: number;
  token: number;
  source: RunSource;
  /** Wall-clock epoch ms when the handler started and finished. */
  startedAt: number;
  finishedAt: number;
}

/** Appends one entry with a single `write` on an `O_APPEND` descriptor: lines from several processes never interleave. */
export class LedgerWriter {
  private readonly fd: number;

  constructor(path: string) {
    this.fd = openSync(path, 'a');
  }

  append(entry: LedgerEntry): void {
    const line = Buffer.from(`${JSON.stringify(entry)}\n`);
    let written = 0;
    while (written < line.length) written += writeSync(this.fd, line, written);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Reads the lines appended since the last call; a line still being written is kept for the next call. */
export class LedgerReader {
  private offset = 0;
  private partial = '';

  constructor(private readonly path: string) {}

  readNew(): LedgerEntry[] {
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch {
      return [];
    }
    const chunks: Buffer[] = [];
    try {
      const buffer = Buffer.alloc(64 * 1024);
      for (;;) {
        const n = readSync(fd, buffer, 0, buffer.length, this.offset);
        if (n === 0) break;
        chunks.push(Buffer.from(buffer.subarray(0, n)));
        this.offset += n;
      }
    } finally {
      closeSync(fd);
    }
    const text = this.partial + Buffer.concat(chunks).toString('utf8');
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    const entries: LedgerEntry[] = [];
    for (const line of lines) {
      if (line.trim() === '') continue;
      try {
        entries.push(JSON.parse(line) as LedgerEntry);
      } catch {
        // Not ours (a hand-edited file): ignored rather than crashing the demo.
      }
    }
    return entries;
  }
}

/** The key of one occurrence of a demo job: `(job, fireTime, shard)`. */
export function occurrenceKey(job: string, fireTime: number, shard: number | null | undefined): string {
  return `${job}|${fireTime}|${shard ?? ''}`;
}
