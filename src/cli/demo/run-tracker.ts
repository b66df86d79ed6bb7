/**
 * What the parent knows about the runs: started runs not yet finished (from node messages), the
 * completed ones (from the ledger, the evidence), recoveries, misfire skips and the node the demo
 * killed. It shows each in the live view once.
 */

import type { NodeHandle } from './fleet.js';
import { type LedgerEntry, type LedgerReader, occurrenceKey } from './ledger.js';
import { clockTime, type LiveView } from './live-view.js';
import type { NodeMessage, RunInfo } from './protocol.js';

/** A run that was going on the killed node. */
export type DeadRun = RunInfo & { node: string };

export interface ActiveRun {
  node: string;
  run: RunInfo;
  /** `performance.now()` when the parent heard of its start. */
  heardAt: number;
}

/** The key of one run: its occurrence and the fencing token it ran with. */
export function runKey(job: string, fireTime: number, shard: number | null, token: number): string {
  return `${occurrenceKey(job, fireTime, shard)}#${token}`;
}

export function describeRun(r: { job: string; fireTime: number; shard: number | null }): string {
  return `${r.job} ${clockTime(r.fireTime)}${r.shard === null ? '' : ` shard ${r.shard}`}`;
}

/**
 * Follows the demo's runs from node messages and the ledger.
 *
 * @example
 * const tracker = new RunTracker(view, new LedgerReader(ledgerPath));
 * child.on('message', (m) => tracker.onMessage(handle, m));
 * setInterval(() => tracker.readLedger(), 250);
 */
export class RunTracker {
  /** Runs heard started and not yet completed, failed or lost with the killed node, by runKey. */
  readonly active = new Map<string, ActiveRun>();
  /** Occurrences whose recovery a node has started. */
  readonly recoveriesStarted = new Set<string>();
  /** Occurrences in the ledger. */
  readonly completed = new Set<string>();
  private readonly shownSkips = new Set<string>();
  readonly misfireSkipped: { job: string; fireTime: number; firstFireTime?: number }[] = [];
  readonly ledgerEntries: LedgerEntry[] = [];
  /** By node name: called when that node declines a crash request. */
  readonly crashAnswers = new Map<string, () => void>();
  private errorsShown = 0;
  /** The node the demo killed, and the runs it had going. */
  kill: { node: string; runs: DeadRun[] } | undefined;

  constructor(
    private readonly view: LiveView,
    private readonly reader: LedgerReader,
  ) {}

  onMessage(h: NodeHandle, m: NodeMessage): void {
    const { view } = this;
    const { style } = view;
    switch (m.type) {
      case 'ready':
        h.ready = true;
        return;
      case 'started': {
        const { run } = m;
        this.active.set(runKey(run.job, run.fireTime, run.shard, run.token), {
          node: m.node,
          run,
          heardAt: performance.now(),
        });
        if (run.source === 'recover') {
          this.recoveriesStarted.add(occurrenceKey(run.job, run.fireTime, run.shard));
          const dead = this.kill?.runs.find(
            (r) => r.job === run.job && r.fireTime === run.fireTime && r.shard === run.shard,
          );
          view.event(
            `${style.yellow('↻')} ${style.node(m.node)} ${style.yellow(`recovers ${describeRun(run)} (attempt ${run.attempt}, token ${run.token}${dead ? ` > ${dead.token}` : ''})`)}`,
          );
        }
        return;
      }
      case 'succeeded':
        this.active.delete(runKey(m.run.job, m.run.fireTime, m.run.shard, m.run.token));
        return;
      case 'failed':
        this.active.delete(runKey(m.run.job, m.run.fireTime, m.run.shard, m.run.token));
        view.event(style.red(`${describeRun(m.run)} failed on ${m.node}: ${m.error}`));
        return;
      case 'skipped': {
        const key = occurrenceKey(m.job, m.fireTime, m.shard);
        if (this.shownSkips.has(key)) return;
        this.shownSkips.add(key);
        view.skipped(m.job, m.fireTime, m.shard);
        return;
      }
      case 'misfired':
        if (m.action === 'skipped')
          this.misfireSkipped.push({ job: m.job, fireTime: m.fireTime, firstFireTime: m.firstFireTime });
        view.misfired(m.job, m.fireTime, m.action, m.count);
        return;
      case 'error':
        // A busy store is retried by the scheduler; say so, but do not flood the view.
        if (this.errorsShown++ < 5)
          view.event(style.dim(`${m.node}: ${m.during} failed (retried): ${m.error}`));
        return;
      case 'crash-declined':
        this.crashAnswers.get(m.node)?.();
        return;
    }
  }

  /** Takes in the ledger lines appended since the last call and shows each completed run. */
  readLedger(): void {
    for (const e of this.reader.readNew()) {
      this.ledgerEntries.push(e);
      this.active.delete(runKey(e.job, e.fireTime, e.shard, e.token));
      this.completed.add(occurrenceKey(e.job, e.fireTime, e.shard));
      let note: string | undefined;
      if (e.source === 'recover') {
        const dead = this.kill?.runs.find(
          (r) => r.job === e.job && r.fireTime === e.fireTime && r.shard === e.shard,
        );
        note = `recovered: attempt ${e.attempt}, token ${e.token}${dead ? ` > ${dead.token}` : ''}; ran once in all`;
      }
      this.view.run(e, note);
    }
  }

  /** The killed node's runs whose recovery has neither started nor completed. */
  pendingRecoveries(): DeadRun[] {
    return (this.kill?.runs ?? []).filter((r) => {
      const key = occurrenceKey(r.job, r.fireTime, r.shard);
      return !this.recoveriesStarted.has(key) && !this.completed.has(key);
    });
  }
}
