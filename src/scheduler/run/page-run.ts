import { KeepAlive, safetyMargin } from '../../lock/keep-alive.js';
import type { Lease, WriteOp } from '../../store/types.js';
import { settle } from '../finish/settle.js';
import type { Job } from '../internal-types.js';
import { keys } from '../keys.js';
import type { NodeState } from '../node-state.js';
import { InvokedMark } from './invoked-mark.js';
import type { RunBook } from './run-book.js';
import { storeTimeNow } from './run-fields.js';
import { RunLeases } from './run-leases.js';

/**
 * A page being run on this node: one keep-alive for the page's lease (for all its runs), and the
 * page's finish once its last run ended — the record deleted (as this node wrote it) and the lease
 * released, in one batch, retried until stored or the lease ends (settle.ts).
 *
 * Invariants: the record stays until every run's outcome is stored, so a node dying mid-page
 * leaves exactly the unfinished runs for recovery. A run abandoned here (stop, the lease lost)
 * leaves the record and frees the lease at once, so another node recovers it without waiting.
 * When the lease cannot be kept, every run of the page is told (its signal aborts) before the
 * lease could end, as a run's own keep-alive would.
 */
export class PageRun {
  private outstanding: number;
  private abandoned = false;
  private lostReason: unknown;
  private readonly onLost = new Set<(reason: unknown) => void>();
  private readonly keeper: KeepAlive;
  private readonly leases: RunLeases;
  private readonly margin: number;
  /** How long each run's history write may wait for others' (its book's `finishLingerMs`). */
  lingerMs = 0;
  /** Says which of the page's handlers have been called (invoked-mark.ts); ends with the page. */
  readonly mark: InvokedMark;

  constructor(
    private readonly state: NodeState,
    private readonly job: Job,
    readonly lease: Lease,
    readonly sentAt: number,
    private readonly recordKey: string,
    /** The record as this node last wrote it: the finish deletes exactly that one. */
    private readonly recordValue: string,
    runs: number,
    /** The start the record gives the page's runs (store ms; a run claimed ahead starts at its own). */
    private readonly startedAt: number,
  ) {
    this.outstanding = runs;
    this.mark = new InvokedMark(
      state.clock,
      state.writes,
      keys.invoked(lease.key, lease.token),
      state.retentionMs,
      () => this.lingerMs,
    );
    state.pagesHere.add(recordKey);
    this.leases = new RunLeases(state.store, state.clock, lease, undefined, sentAt);
    this.margin = safetyMargin(job.spec.lockAtMostForMs);
    this.keeper = new KeepAlive(this.leases, {
      leaseMs: job.spec.lockAtMostForMs,
      renew: true,
      clock: state.clock,
      logger: state.logger,
      onLost: (reason) => {
        this.lostReason = reason;
        for (const f of this.onLost) f(reason);
      },
    });
    if (runs === 0) {
      // Nothing to run (only skips): the finish is the page's whole life; stop() waits for it.
      const done = this.finish();
      state.running.add(done);
      void done.finally(() => state.running.delete(done));
    }
  }

  /** The page's lease could not be kept: a run not started yet must not start (page-starts.ts). */
  get lost(): boolean {
    return (
      this.lostReason !== undefined || this.state.clock.monotonic() >= this.leases.localDeadline - this.margin
    );
  }

  /**
   * The book of the page's runs: the page keeps their claim; a run writes only its history. One
   * for all of them (nothing in it is a run's but the hook its `keep` adds): a book of closures
   * per run was seven closures more per run in flight.
   */
  private shared: RunBook | undefined;

  book(): RunBook {
    if (this.shared) return this.shared;
    const page = this;
    const held = () =>
      this.lostReason === undefined && this.state.clock.monotonic() < this.leases.localDeadline - this.margin;
    this.shared = {
      wantsInflight: false,
      get finishLingerMs() {
        return page.lingerMs;
      },
      keep: (onLost) => {
        if (this.lostReason !== undefined) {
          onLost(this.lostReason);
          return { stop: async () => {}, held };
        }
        this.onLost.add(onLost);
        return {
          stop: async () => {
            this.onLost.delete(onLost);
          },
          held,
        };
      },
      startOps: () => [],
      finishOps: (history) => ({ ops: history ? [history] : [] }),
      // Stored after the page's lease may have ended (no renewal for a whole lease: a frozen
      // node, a stalled link): another node may have recovered the run meanwhile.
      lapsed: () =>
        this.lostReason !== undefined || this.state.clock.monotonic() >= this.leases.localDeadline,
      abandonOps: (history) => (history ? [history] : []),
      ended: (stored) => this.runEnded(stored),
      callsLate: (claim) => {
        if (claim.item !== undefined) this.mark.wait([claim.item]);
      },
      // Marked with the start the record gives the run (as claim/prev-run.ts reads it) and this
      // node's estimate of when it called it.
      invoked: (claim) =>
        this.mark.invoked(
          Math.max(this.startedAt, claim.scheduledAt ?? this.startedAt),
          storeTimeNow(claim, this.state.clock),
          claim.item,
        ),
    };
    return this.shared;
  }

  /** The page's last run ends with the page's finish (its promise), so that stop() waits for it. */
  private runEnded(stored: boolean): Promise<void> | undefined {
    if (!stored) this.abandoned = true;
    return --this.outstanding === 0 ? this.finish() : undefined;
  }

  private async finish(): Promise<void> {
    const s = this.state;
    await this.keeper.stop();
    const release: WriteOp = { op: 'release', key: this.lease.key, token: this.lease.token };
    // Abandoned: the lease is freed, the record kept — another node takes the page over and runs
    // what has no outcome on record. One try: the lease ends on its own if the store is away.
    // The mark stays: the recovery's record names this page's run (`since`), judged by it.
    const unmark = await this.mark.end(this.abandoned);
    if (this.abandoned) {
      s.pagesHere.delete(this.recordKey);
      await s.writes
        .submit([release])
        .catch((err) =>
          s.emit('error', { error: err, during: `release of a page of ${this.job.spec.name}` }),
        );
      return;
    }
    const ops: WriteOp[] = [{ op: 'delete', key: this.recordKey, ifValue: this.recordValue }, release];
    if (unmark) ops.push(unmark);
    await settle(
      s,
      `finish of a page of ${this.job.spec.name}`,
      ops,
      this.lease,
      this.sentAt,
      () => s.pagesHere.delete(this.recordKey),
      // Not stored before the lease ended: every outcome is on record, so whoever takes the page
      // over only deletes it.
      () => s.pagesHere.delete(this.recordKey),
    );
  }
}
