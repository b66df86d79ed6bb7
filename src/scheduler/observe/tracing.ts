import type { Span, SpanContext, Tracer } from '@opentelemetry/api';
import { invalidArgument } from '../../core/errors.js';
import { loadOtel, type OtelApi } from '../../core/otel.js';
import { packageVersion } from '../../core/version.js';
import type { OccurrenceId } from '../keys.js';
import type { RunSource, RunStatus, SchedulerTracer } from '../types.js';

/**
 * OpenTelemetry spans of the scheduler, through `@opentelemetry/api` only (no SDK: without one
 * registered every span is a no-op).
 *
 * - `oncely.claim`: one per acquire round trip (a batch of occurrences), a root span.
 * - `oncely.run`: one per attempt of an occurrence, from its in-flight record to the handler's
 *   end; a root span (its own trace) linked to the claim that won it. The handler runs with it
 *   as the active span, so the handler's own spans are its children.
 * - `oncely.finish`: the finishing batch (history, release, done hold), child of the last run.
 * Spans never take the context `start()` was called in as parent: the loop serves no caller.
 *
 * Cheap when nothing records: attributes are built only for a recording span, and a handler is
 * wrapped in a context only when its span carries a valid span context.
 */
export class Tracing {
  private constructor(
    private readonly api: OtelApi,
    private readonly tracer: Tracer,
  ) {}

  /** Undefined when `@opentelemetry/api` is not installed (then a `tracer` is an error). */
  static create(tracer: SchedulerTracer | undefined): Tracing | undefined {
    const api = loadOtel();
    if (!api) {
      if (tracer)
        throw invalidArgument(
          "the tracer option needs the '@opentelemetry/api' package; install it with: npm install @opentelemetry/api",
        );
      return undefined;
    }
    return new Tracing(
      api,
      (tracer as Tracer | undefined) ?? api.trace.getTracer('oncely', packageVersion()),
    );
  }

  claim(node: string, count: number): Span {
    const span = this.tracer.startSpan('oncely.claim', undefined, this.api.ROOT_CONTEXT);
    if (span.isRecording()) span.setAttributes({ 'oncely.node': node, 'oncely.claim.count': count });
    return span;
  }

  claimEnded(span: Span, won: number, refused: number, error?: unknown): void {
    if (span.isRecording()) {
      span.setAttributes({ 'oncely.claim.won': won, 'oncely.claim.refused': refused });
      if (error !== undefined) this.failed(span, error);
    }
    span.end();
  }

  /** The link to a claim span, for the runs it won (undefined when it is not recorded). */
  linkOf(span: Span): SpanContext | undefined {
    return span.isRecording() ? span.spanContext() : undefined;
  }

  run(
    occ: OccurrenceId,
    at: { node: string; token: number; attempt: number; source: RunSource },
    claim: SpanContext | undefined,
  ): Span {
    const span = this.tracer.startSpan(
      'oncely.run',
      claim === undefined ? undefined : { links: [{ context: claim }] },
      this.api.ROOT_CONTEXT,
    );
    if (span.isRecording()) {
      span.setAttributes({
        'oncely.job': occ.job,
        'oncely.fire_time': new Date(occ.fireTime).toISOString(),
        'oncely.node': at.node,
        'oncely.token': at.token,
        'oncely.attempt': at.attempt,
        'oncely.source': at.source,
        ...(occ.scheduleId !== undefined && { 'oncely.schedule_id': occ.scheduleId }),
        ...(occ.shard !== undefined && { 'oncely.shard': occ.shard }),
      });
    }
    return span;
  }

  /** Calls `fn` with `span` as the active span (when it has a span context worth passing on). */
  within<T>(span: Span, fn: () => T): T {
    if (span.spanContext() === this.api.INVALID_SPAN_CONTEXT) return fn();
    return this.api.context.with(this.api.trace.setSpan(this.api.ROOT_CONTEXT, span), fn);
  }

  /** Ends a run or finish span with the attempt's status (an error or abandonment is ERROR). */
  ended(span: Span, status: RunStatus, error?: unknown): void {
    if (span.isRecording()) {
      span.setAttribute('oncely.status', status);
      if (status !== 'succeeded') this.failed(span, error ?? status);
    }
    span.end();
  }

  /**
   * The finishing batch of a run, as a child of its last attempt's span. A run span without a
   * span context (no SDK: every span a no-op) is no parent: an SDK starts a root span either way,
   * and the context built to carry it was, per run of a fan-out, most of what tracing allocated.
   */
  finish(run: Span, status: RunStatus): Span {
    const span = this.tracer.startSpan(
      'oncely.finish',
      undefined,
      run.spanContext() === this.api.INVALID_SPAN_CONTEXT
        ? this.api.ROOT_CONTEXT
        : this.api.trace.setSpan(this.api.ROOT_CONTEXT, run),
    );
    if (span.isRecording()) span.setAttribute('oncely.status', status);
    return span;
  }

  finishEnded(span: Span, stored: boolean, error?: unknown): void {
    if (span.isRecording()) {
      span.setAttribute('oncely.finish.stored', stored);
      if (!stored) this.failed(span, error ?? 'the finishing batch was not stored');
    }
    span.end();
  }

  private failed(span: Span, error: unknown): void {
    const exception = error instanceof Error ? error : String(error);
    span.recordException(exception);
    span.setStatus({
      code: this.api.SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : String(error),
    });
  }
}
