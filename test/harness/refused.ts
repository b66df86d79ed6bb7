/** The error a call was refused with; an `Error('not refused')` (which no expectation matches) if it was not. */
export function refused(call: Promise<unknown>): Promise<Error> {
  return call.then(
    () => new Error('not refused'),
    (e: unknown) => e as Error,
  );
}
