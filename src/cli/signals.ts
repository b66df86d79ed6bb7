/**
 * SIGTERM/SIGINT handling for long-running commands. The first signal asks for a graceful stop
 * (the returned promise resolves with its name); any later one calls `onSecond` (exit at once).
 * Installed before the command starts its work, so a signal that arrives during start-up is not
 * lost: the command stops as soon as it is up.
 */
export interface ShutdownRequest {
  /** Resolves with the first signal received. */
  requested: Promise<NodeJS.Signals>;
  /** Removes the handlers (default Node behaviour again). */
  dispose(): void;
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

export function onShutdown(onSecond: (signal: NodeJS.Signals) => void): ShutdownRequest {
  let first: NodeJS.Signals | undefined;
  let resolve: (signal: NodeJS.Signals) => void = () => {};
  const requested = new Promise<NodeJS.Signals>((r) => {
    resolve = r;
  });
  const handler = (signal: NodeJS.Signals) => {
    if (first === undefined) {
      first = signal;
      resolve(signal);
    } else {
      onSecond(signal);
    }
  };
  for (const s of SIGNALS) process.on(s, handler);
  return {
    requested,
    dispose: () => {
      for (const s of SIGNALS) process.off(s, handler);
    },
  };
}
