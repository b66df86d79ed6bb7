/**
 * CPU time and memory of a process, read from Linux's /proc: `utime + stime` of
 * `/proc/<pid>/stat` (all its threads, in clock ticks) and `VmRSS`/`VmHWM` (peak) of
 * `/proc/<pid>/status`. `undefined` where /proc cannot be read; the caller then uses what the
 * child reports itself (`process.cpuUsage()`, `process.resourceUsage().maxRSS`).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { childServerPort, serverPids } from '../cpu.js';

export interface ProcUsage {
  /** User + system CPU time since the process started, µs. */
  cpuUs: number;
  /**
   * Of it, the main thread's (`/proc/<pid>/task/<pid>/stat`): JavaScript, and what V8 does on
   * that thread; the rest is V8's workers (TurboFan's compile jobs, parallel GC) and libuv's.
   * NaN where the thread's stat cannot be read.
   */
  mainCpuUs: number;
  rssBytes: number;
  /** Peak resident set size, bytes. */
  peakRssBytes: number;
}

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

function kB(status: string, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return m ? Number(m[1]) * 1024 : Number.NaN;
}

/**
 * utime + stime of a `stat` line: `pid (comm) state ppid …` — comm may contain spaces and
 * parentheses; utime and stime are fields 14 and 15, the 12th and 13th after the closing one.
 */
function statTicks(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function mainThreadTicks(pid: number): number {
  try {
    return statTicks(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8'));
  } catch {
    return Number.NaN;
  }
}

export function procUsage(pid: number): ProcUsage | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return {
      cpuUs: (statTicks(stat) / clockTicks()) * 1e6,
      mainCpuUs: (mainThreadTicks(pid) / clockTicks()) * 1e6,
      rssBytes: kB(status, 'VmRSS'),
      peakRssBytes: kB(status, 'VmHWM'),
    };
  } catch {
    return undefined;
  }
}

/**
 * CPU time of a throwaway server's processes (found by its port under this process, see
 * ../cpu.ts), kept per thread: PostgreSQL forks a process per connection, and a connection that
 * closes takes its run time with it, so the tracker remembers the last value seen for every
 * thread and is sampled often (`every` ms) to lose little. `undefined` when the server is not our
 * child or /proc is missing.
 */
export class ServerCpu {
  private readonly last = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly port: number,
    every: number,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), every);
    this.timer.unref();
  }

  static start(url: string, every = 250): ServerCpu | undefined {
    const port = childServerPort(url);
    return port === undefined ? undefined : new ServerCpu(port, every);
  }

  private sample(): void {
    for (const pid of serverPids(this.port)) {
      let tids: string[];
      try {
        tids = readdirSync(`/proc/${pid}/task`);
      } catch {
        continue;
      }
      for (const tid of tids) {
        try {
          const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
          if (Number.isFinite(ns)) this.last.set(`${pid}/${tid}`, ns);
        } catch {
          // the thread ended between the listing and the read
        }
      }
    }
  }

  /** Cumulative µs of every thread seen so far (sampled now). */
  totalUs(): number {
    this.sample();
    let ns = 0;
    for (const v of this.last.values()) ns += v;
    return ns / 1000;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
