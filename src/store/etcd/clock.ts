import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/**
 * The etcd store's clock. etcd has no time API (its leases count seconds on the leader and report
 * whole seconds), so the store clock is defined as **the wall clock of one etcd member**: the
 * first host of the store URL that answers. Every etcd member serves plain HTTP(S) next to gRPC on
 * its client port, and Go's HTTP server stamps each reply with a `Date` header read from that
 * clock at the moment it answers — to the second.
 *
 * Calibration turns that into milliseconds. A reply stamped second S, sent at local monotonic
 * time t1 and received at t2, proves `offset ∈ [S - t2, S + 1000 - t1)` where
 * `storeTime = performance.now() + offset`. Probes timed to land where the member's clock should
 * cross a second boundary narrow that interval by ~20x per round (20 probes spread over it); after
 * 2-3 rounds (1-2 s, once per process and member, shared by every store) it is a few ms wide, and
 * the midpoint is used. From then on `now()` needs no round trip: it is the local monotonic clock
 * plus the offset, never decreasing. It is calibrated again every 10 minutes in the background,
 * so that the local clock's rate error cannot accumulate.
 *
 * What all clients then agree on: the member's clock, each within ± half its calibration width
 * (`errorBound()`; ~1-3 ms on a LAN). A client's own wall clock plays no part (its `Date.now()`
 * may be hours off: lease maths never reads it), so client clock skew cannot grant a lease early.
 * What it relies on: clients list the same member first (or members' clocks agree, as etcd itself
 * expects: it warns about member clock drift over 1 s), and the member's clock does not step; if
 * a probe shows it did (an empty interval), calibration starts over from that probe.
 */
export class EtcdClock {
  private offset: number | undefined;
  private width = Number.POSITIVE_INFINITY;
  private last = Number.NEGATIVE_INFINITY;
  private calibratedAt = Number.NEGATIVE_INFINITY;
  private calibrating: Promise<void> | undefined;

  constructor(
    private readonly urls: readonly string[],
    private readonly timeoutMs: number,
    private readonly agentOptions: { ca?: Buffer | undefined } = {},
  ) {}

  /** Resolves once the clock is calibrated (the first call probes the member; later ones do not). */
  ready(): Promise<void> {
    if (this.offset !== undefined) {
      if (this.calibrating === undefined && performance.now() - this.calibratedAt > RECALIBRATE_MS) {
        // Background: a failure keeps the current calibration, and the next call tries again.
        this.calibrating = this.calibrate()
          .catch(() => {})
          .finally(() => {
            this.calibrating = undefined;
          });
      }
      return Promise.resolve();
    }
    this.calibrating ??= this.calibrate().finally(() => {
      this.calibrating = undefined;
    });
    return this.calibrating;
  }

  /** Store time in epoch ms; never decreases. Call after {@link ready}. */
  now(): number {
    if (this.offset === undefined) throw new Error('EtcdClock.now() before ready()');
    this.last = Math.max(this.last, Math.floor(performance.now() + this.offset));
    return this.last;
  }

  /** Half the calibration interval: `now()` is within ± this many ms of the member's clock. */
  errorBound(): number {
    return this.width / 2;
  }

  private async calibrate(): Promise<void> {
    let lastError: unknown;
    for (const url of this.urls) {
      const agent = url.startsWith('https:')
        ? new HttpsAgent({ keepAlive: true, ...this.agentOptions })
        : new HttpAgent({ keepAlive: true });
      try {
        const { offset, width } = await calibrateAgainst(() => this.probe(url, agent));
        this.offset = offset;
        this.width = width;
        this.calibratedAt = performance.now();
        return;
      } catch (err) {
        lastError = err;
      } finally {
        agent.destroy();
      }
    }
    throw lastError;
  }

  /** The member's `Date` header (epoch ms, a whole second) for one GET of `/version`. */
  private probe(url: string, agent: HttpAgent): Promise<number> {
    return new Promise((resolve, reject) => {
      const send = url.startsWith('https:') ? httpsRequest : httpRequest;
      const req = send(`${url}/version`, { agent, timeout: this.timeoutMs }, (res: IncomingMessage) => {
        res.resume();
        const date = Date.parse(res.headers.date ?? '');
        if (Number.isFinite(date)) resolve(date);
        else reject(new Error(`${url}/version answered without a Date header (is this an etcd client URL?)`));
      });
      req.on('timeout', () => req.destroy(new Error(`${url} did not answer within ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });
  }
}

const RECALIBRATE_MS = 10 * 60_000;
const PROBES_PER_ROUND = 20;
const MAX_ROUNDS = 6;

/** The interval search described in the class comment; `probe` answers a whole second in ms. */
async function calibrateAgainst(probe: () => Promise<number>): Promise<{ offset: number; width: number }> {
  let lo = Number.NEGATIVE_INFINITY;
  let hi = Number.POSITIVE_INFINITY;
  let minRtt = Number.POSITIVE_INFINITY;
  const sample = async (at?: number) => {
    if (at !== undefined) {
      const wait = at - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    const sent = performance.now();
    const second = await probe();
    const received = performance.now();
    minRtt = Math.min(minRtt, received - sent);
    const low = Math.max(lo, second - received);
    const high = Math.min(hi, second + 1000 - sent);
    // Empty: the member's clock stepped since an earlier probe; only this probe still holds.
    [lo, hi] = low < high ? [low, high] : [second - received, second + 1000 - sent];
  };
  await sample();
  for (let round = 0; round < MAX_ROUNDS && hi - lo > 3 + 2 * minRtt; round++) {
    const start = performance.now() + 5 + minRtt;
    const width = hi - lo;
    const times: number[] = [];
    for (let j = 0; j < PROBES_PER_ROUND; j++) {
      // If the offset were `guess`, the member's clock would cross a second at local time `t`;
      // the probe is sent half a round trip earlier so that it is read there.
      const guess = lo + ((j + 0.5) * width) / PROBES_PER_ROUND;
      const t = Math.ceil((start + guess) / 1000) * 1000 - guess;
      times.push(t - minRtt / 2);
    }
    await Promise.all(times.map((t) => sample(t)));
  }
  return { offset: (lo + hi) / 2, width: hi - lo };
}

const clocks = new Map<string, EtcdClock>();

/** The process-wide clock of the members `urls` (one calibration per process, shared by stores). */
export function sharedClock(urls: readonly string[], timeoutMs: number, ca?: Buffer): EtcdClock {
  const id = `${urls.join(',')}#${ca === undefined ? '' : ca.toString('base64')}`;
  let clock = clocks.get(id);
  if (clock === undefined) {
    clock = new EtcdClock(urls, timeoutMs, ca === undefined ? {} : { ca });
    clocks.set(id, clock);
  }
  return clock;
}
