import type { Span } from '@opentelemetry/api';
import { INTERNAL_ABORT } from '../../core/signals.js';
import { jobContext, type SignalSource } from './job-context.js';
import type { Claim, RunDeps } from './run-records.js';

/**
 * Starts an attempt of a page's run: its `oncely.run` span, its context (signal from `halt`), and
 * its handler, called a microtask later as executeRun calls it (never inside a page's launch loop)
 * and inside the span when that carries a span context. Shared by page-item-run.ts and
 * page-batch.ts.
 */
export function callHandler(
  deps: RunDeps,
  claim: Claim,
  halt: SignalSource,
): { span: Span | undefined; done: Promise<unknown> } {
  const { tracing } = deps;
  const span = tracing?.run(
    claim.occ,
    { node: deps.node, token: claim.lease.token, attempt: claim.attempt, source: claim.source },
    claim.claimSpan,
  );
  const ctx = jobContext(claim, deps.spec, claim.attempt, deps.node, halt);
  const done = Promise.resolve(ctx).then(
    span && tracing ? (c) => tracing.within(span, () => deps.handler(c)) : deps.handler,
  );
  return { span, done };
}

/**
 * Waits for a handler's promise to settle, at most `deps.handlerSettleMs`: a run abandoned while
 * its claim still holds (stop()) gives a handler that ignores its signal a little time to end, so
 * that no other node recovers the occurrence while this one still runs it. Shared by run.ts,
 * page-item-run.ts and page-batch.ts.
 */
export async function handlerSettled(deps: RunDeps, done: Promise<unknown>): Promise<void> {
  const settle = new AbortController();
  await Promise.race([
    done.then(
      () => {},
      () => {},
    ),
    deps.clock.sleep(deps.handlerSettleMs, settle.signal),
  ]);
  settle.abort(INTERNAL_ABORT);
}
