/**
 * CPU time per operation, split between this Node process and the database server, so a gap
 * between oncely and a floor can be placed: more JavaScript per call, or more work per statement.
 *
 * The server's CPU is only visible for a throwaway server this process started: its processes are
 * found under this process by the port in their command line, and their threads' run time is read
 * from `/proc/<pid>/task/<tid>/schedstat` (nanoseconds; Linux only).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Process CPU time (user + system) of this Node process, in µs. */
export function nodeCpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function parentOf(pid: string): string | undefined {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  // pid (comm) state ppid …; comm may contain spaces and parentheses
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
}

/** The processes of the server listening on `port` that this process started, or `[]`. */
export function serverPids(port: number): string[] {
  let all: string[];
  try {
    all = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const children = new Map<string, string[]>();
  for (const pid of all) {
    const parent = parentOf(pid);
    if (parent === undefined) continue;
    const list = children.get(parent) ?? [];
    list.push(pid);
    children.set(parent, list);
  }
  const portText = String(port);
  const roots = (children.get(String(process.pid)) ?? []).filter((pid) => {
    const args = (read(`/proc/${pid}/cmdline`) ?? '').split('\0');
    // redis-server rewrites its title to `redis-server 127.0.0.1:<port>`
    return args.some((a) => a === portText || a === `--port=${portText}` || a.endsWith(`:${portText}`));
  });
  const found: string[] = [];
  const queue = [...roots];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    found.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}

/** Total run time of every thread of `pids`, in µs (threads that ended meanwhile are lost). */
export function threadsCpuUs(pids: readonly string[]): number {
  let ns = 0;
  for (const pid of pids) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      const line = read(`/proc/${pid}/task/${tid}/schedstat`);
      if (line !== undefined) ns += Number(line.split(' ')[0]);
    }
  }
  return ns / 1000;
}

/**
 * A reader of the server's cumulative CPU µs, or `undefined` when the server is not one of our
 * children (given by URL) or /proc is not there. Re-scans the process list each time, since
 * PostgreSQL forks a process per connection.
 */
export function serverCpuReader(url: string): (() => number) | undefined {
  const port = childServerPort(url);
  return port === undefined ? undefined : () => threadsCpuUs(serverPids(port));
}

/** The port of `url` when a server of ours (a child process) listens on it; otherwise `undefined`. */
export function childServerPort(url: string): number | undefined {
  let port: number;
  try {
    port = Number(new URL(url).port);
  } catch {
    return undefined;
  }
  return port && serverPids(port).length > 0 ? port : undefined;
}
