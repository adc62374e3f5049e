import { keepAttribute, type Attributes, type AttributeValue } from "./attributes";
import type { SpanContext } from "./trace-context";

/** OTLP's span kinds, with its numbers (used as they are in the JSON encoding). */
export const SpanKind = { Internal: 1, Server: 2, Client: 3, Producer: 4, Consumer: 5 } as const;
export type SpanKind = (typeof SpanKind)[keyof typeof SpanKind];

/** OTLP's status codes: unset unless something failed (OTel asks instrumentations not to set Ok). */
export const StatusCode = { Unset: 0, Ok: 1, Error: 2 } as const;

/** A span as instrumented code holds it: the same shape whether it is recorded or not. */
export interface Span {
  readonly context: SpanContext;
  /** False when not sampled (or tracing is off): attributes are then not even filtered. */
  readonly recording: boolean;
  setAttribute(key: string, value: AttributeValue | undefined): this;
  setAttributes(attributes: Record<string, AttributeValue | undefined>): this;
  /** Marks the span failed; `message` is a short reason in our words, never a peer's or a model's text. */
  fail(errorType: string, message?: string): this;
  /** Ends the span (once; later calls are ignored) and hands it to the exporter if recorded. */
  end(): void;
}

/** A recorded span once ended: what an exporter receives. */
export interface FinishedSpan {
  readonly name: string;
  readonly kind: SpanKind;
  readonly context: SpanContext;
  readonly parentSpanId?: string;
  /** The parent came from another process (a header), as OTLP's span flags record. */
  readonly parentRemote?: boolean;
  /** Milliseconds since the epoch, with sub-millisecond precision. */
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: Attributes;
  readonly droppedAttributes: number;
  readonly status: { code: number; message?: string };
}

/** Where ended spans go: the batching exporter, or a list in a test. */
export interface SpanSink {
  onEnd(span: FinishedSpan): void;
}

/** The epoch time now in milliseconds, monotonic within the process (a clock step does not reorder spans). */
export const nowMs = (): number => performance.timeOrigin + performance.now();

export class RecordingSpan implements Span {
  readonly recording = true;
  private readonly attributes: Attributes = {};
  private dropped = 0;
  private status: { code: number; message?: string } = { code: StatusCode.Unset };
  private ended = false;

  constructor(
    private readonly sink: SpanSink,
    readonly name: string,
    readonly kind: SpanKind,
    readonly context: SpanContext,
    private readonly parent: SpanContext | undefined,
    private readonly startMs: number,
  ) {}

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (value !== undefined && !keepAttribute(key, value, this.attributes)) this.dropped++;
    return this;
  }

  setAttributes(attributes: Record<string, AttributeValue | undefined>): this {
    for (const key in attributes) this.setAttribute(key, attributes[key]);
    return this;
  }

  fail(errorType: string, message?: string): this {
    this.setAttribute("error.type", errorType);
    this.status = { code: StatusCode.Error, message: message?.slice(0, 256) };
    return this;
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.sink.onEnd({
      name: this.name,
      kind: this.kind,
      context: this.context,
      parentSpanId: this.parent?.spanId,
      parentRemote: this.parent?.remote,
      startMs: this.startMs,
      endMs: nowMs(),
      attributes: this.attributes,
      droppedAttributes: this.dropped,
      status: this.status,
    });
  }
}

/** A span that records nothing but still carries its context on (so an unsampled trace stays one trace). */
export class NonRecordingSpan implements Span {
  readonly recording = false;
  constructor(readonly context: SpanContext) {}
  setAttribute(): this {
    return this;
  }
  setAttributes(): this {
    return this;
  }
  fail(): this {
    return this;
  }
  end(): void {}
}
