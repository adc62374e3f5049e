import type { Attributes } from "./attributes";
import { newSpanId, newTraceId } from "./ids";
import type { Sampler } from "./sampler";
import { NonRecordingSpan, nowMs, RecordingSpan, SpanKind, type Span, type SpanSink } from "./span";
import { isValidTraceId, type SpanContext } from "./trace-context";

export interface SpanOptions {
  kind?: SpanKind;
  /** The parent: a span here, or a context from a header. None starts a new trace. */
  parent?: Span | SpanContext;
  attributes?: Attributes;
}

/** Starts spans. The node holds one; with tracing off it is the no-op below. */
export interface Tracer {
  readonly enabled: boolean;
  startSpan(name: string, options?: SpanOptions): Span;
}

const parentContext = (p: Span | SpanContext | undefined): SpanContext | undefined =>
  p === undefined ? undefined : "context" in p ? p.context : p;

/**
 * With tracing off: no ids are drawn, nothing is allocated but the span object when a parent came in (so the
 * trace still passes through this node to the next, as OpenTelemetry's no-op API does), and a shared one when
 * none did. This is the cost of tracing when off: one object per span site.
 */
export class NoopTracer implements Tracer {
  readonly enabled = false;
  private static readonly NONE = new NonRecordingSpan({
    traceId: "0".repeat(32),
    spanId: "0".repeat(16),
    sampled: false,
    remote: false,
  });

  startSpan(_name: string, options?: SpanOptions): Span {
    const parent = parentContext(options?.parent);
    return parent ? new NonRecordingSpan(parent) : NoopTracer.NONE;
  }
}

/** Is this span's context one to pass on? (The no-op's shared span has all-zero ids, which are never sent.) */
export const hasValidContext = (span: Span): boolean => isValidTraceId(span.context.traceId);

export class RecordingTracer implements Tracer {
  readonly enabled = true;

  constructor(
    private readonly sampler: Sampler,
    private readonly sink: SpanSink,
  ) {}

  startSpan(name: string, options: SpanOptions = {}): Span {
    const parent = parentContext(options.parent);
    const traceId = parent?.traceId ?? newTraceId();
    const sampled = this.sampler.shouldSample(traceId, parent);
    const context: SpanContext = {
      traceId,
      spanId: newSpanId(),
      sampled,
      traceState: parent?.traceState,
      remote: false,
    };
    if (!sampled) return new NonRecordingSpan(context);
    const span = new RecordingSpan(this.sink, name, options.kind ?? SpanKind.Internal, context, parent, nowMs());
    if (options.attributes) span.setAttributes(options.attributes);
    return span;
  }
}
