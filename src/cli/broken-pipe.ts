/**
 * A reader that goes away (`oncely run jobs.yaml 2>&1 | head -3`) makes every later write to
 * stdout or stderr fail with EPIPE, reported as an 'error' event on the stream; without a
 * listener that event is an uncaught exception and ends the process — a node that stops running
 * its jobs because nobody reads its log. With these listeners the node goes on, writing nowhere
 * (`isClosed` lets writers skip the work), and shuts down as usual on SIGTERM.
 */

const closed = new WeakSet<NodeJS.WriteStream>();
let installed = false;

/**
 * Keeps a failed stdout/stderr (EPIPE, or any other write error) from ending the process; from
 * then on, writes to it are dropped. Idempotent.
 */
export function surviveClosedOutput(): void {
  if (installed) return;
  installed = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', () => {
      closed.add(stream);
    });
  }
}

/** Whether `stream` failed (its reader went away): writing to it is pointless. */
export function isClosed(stream: NodeJS.WriteStream): boolean {
  return closed.has(stream) || stream.destroyed;
}
